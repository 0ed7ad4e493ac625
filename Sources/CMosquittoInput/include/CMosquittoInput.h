// libmosquitto's reads of the broker socket through a buffer (CoatyMQTT's network threads).
//
// libmosquitto 2.0 reads every incoming packet with three or more read() calls (its command byte, each byte of its
// remaining length, then the rest) and keeps no buffer of its own, so a burst of small publications costs three
// system calls per packet. `coaty_mosquitto_buffer_reads` points libmosquitto's own calls of read() (its relocation
// slots, nobody else's) at `coaty_buffered_read`; a thread that serves a connection attaches a buffer for the
// connection's socket, and libmosquitto's reads of that socket on that thread are then served from one larger read.
#ifndef COATY_EDGE_MOSQUITTO_INPUT_H
#define COATY_EDGE_MOSQUITTO_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// Points libmosquitto's read() at `coaty_buffered_read`, once per process (later calls return the first result).
/// Returns how many of libmosquitto's relocation slots now point there: 0 when libmosquitto is not loaded or its
/// dynamic section was not understood (its reads then go straight to the system, unbuffered, as before).
int coaty_mosquitto_buffer_reads(void);

/// Gives the calling thread a buffer of `capacity` bytes for `descriptor` (a buffer it had is emptied and reused
/// when large enough); 0, or -1 when memory is short (reads then stay unbuffered).
int coaty_read_buffer_attach(int descriptor, size_t capacity);

/// Frees the calling thread's buffer and what it still held (the connection it belonged to has ended).
void coaty_read_buffer_detach(void);

/// The bytes read from the socket into the calling thread's buffer and not yet handed to libmosquitto.
size_t coaty_read_buffer_pending(void);

/// The read() system calls the calling thread's buffer has made on its socket since it was attached.
uint64_t coaty_read_buffer_system_reads(void);

/// read() for libmosquitto: reads of the calling thread's buffered descriptor come from its buffer, refilled with one
/// read() of up to its capacity when empty (a read larger than the capacity goes straight to the socket); any other
/// descriptor, or a thread without a buffer, reads from the system directly.
ssize_t coaty_buffered_read(int descriptor, void *bytes, size_t count);

#endif

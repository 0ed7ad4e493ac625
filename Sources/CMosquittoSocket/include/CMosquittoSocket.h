// libmosquitto's reads and writes of the broker socket through buffers (CoatyMQTT's connections).
//
// libmosquitto 2.0 reads every incoming packet with three or more read() calls (its command byte, each byte of its
// remaining length, then the rest) and keeps no buffer of its own, so a burst of small publications costs three
// system calls per packet. `coaty_mosquitto_buffer_reads` points libmosquitto's own calls of read() (its relocation
// slots, nobody else's) at `coaty_buffered_read`; a thread that serves a connection attaches a buffer for the
// connection's socket, and libmosquitto's reads of that socket on that thread are then served from one larger read.
//
// It also writes each outgoing packet with a write() of its own, and has no call to write several at once, so a batch
// of values cost a system call each. `coaty_mosquitto_gather_writes` points libmosquitto's write() slots, and those of
// the libcrypto it uses (OpenSSL writes TLS records with write()), at `coaty_gathered_write`: while a thread gathers
// for a connection's write buffer (between `coaty_write_gather_begin` and `coaty_write_gather_end`, around one
// `mosquitto_loop_write`), what libmosquitto writes to that socket is copied into the buffer, and the end writes it
// with one write().
#ifndef COATY_EDGE_MOSQUITTO_SOCKET_H
#define COATY_EDGE_MOSQUITTO_SOCKET_H

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

/// Points libmosquitto's and libcrypto's write() at `coaty_gathered_write`, once per process (later calls return the
/// first result). Returns how many relocation slots now point there: 0 when libmosquitto is not loaded or its dynamic
/// section was not understood (its writes then go straight to the system, one per packet, as before).
int coaty_mosquitto_gather_writes(void);

/// A connection's write buffer: shared by every thread that writes for the connection, behind a lock of its own. The
/// functions below take NULL (no buffer, for want of memory) as a buffer that gathers nothing.
struct coaty_write_buffer;

/// A buffer of `capacity` bytes, attached to no descriptor yet; NULL when memory is short.
struct coaty_write_buffer *coaty_write_buffer_create(size_t capacity);

void coaty_write_buffer_destroy(struct coaty_write_buffer *buffer);

/// Points the buffer at a new connection's socket, `descriptor` being libmosquitto's and `output` one that the caller
/// keeps open (a dup) until it attaches the buffer elsewhere (-1, -1: nowhere), and drops what it held for the one
/// before (those bytes cannot go anywhere any more); returns how many bytes were dropped. Held bytes are written to
/// `output`: libmosquitto closes its descriptor when a connection fails, and the number may be reused meanwhile.
size_t coaty_write_buffer_attach(struct coaty_write_buffer *buffer, int descriptor, int output);

/// The bytes the buffer holds: gathered and not yet written, because the socket took only part of them (its send
/// buffer was full). They are written before anything else, by the next end of a gathering.
size_t coaty_write_buffer_pending(struct coaty_write_buffer *buffer);

/// The write() system calls made on the buffer's sockets for gathered bytes since it was created.
uint64_t coaty_write_buffer_system_writes(struct coaty_write_buffer *buffer);

/// From now until `coaty_write_gather_end`, the calling thread's writes of the buffer's socket through
/// `coaty_gathered_write` are gathered in it.
void coaty_write_gather_begin(struct coaty_write_buffer *buffer);

/// Writes what the buffer holds, as far as the socket takes it (the rest stays held, see `pending`), and ends the
/// calling thread's gathering. 0, or -1 with errno set when the socket failed: the bytes held are then dropped, and
/// every write of the socket through the buffer fails with the same errno until the next attach.
int coaty_write_gather_end(void);

/// write() for libmosquitto and libcrypto: while the calling thread gathers for the buffer of `descriptor`, the bytes
/// are appended to the buffer (what it held is written first when they would not fit; a write at least as large as
/// the buffer goes to the socket directly once the buffer is empty), or EAGAIN when the socket takes nothing more
/// for now. Any other descriptor or thread writes to the system directly.
ssize_t coaty_gathered_write(int descriptor, const void *bytes, size_t count);

#endif

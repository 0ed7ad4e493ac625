#ifndef COATY_EDGE_EMULATION_H
#define COATY_EDGE_EMULATION_H

// Emulated I2C chips and GPIO chips behind device nodes of a umockdev testbed. The real libi2c and libgpiod
// calls of a process that runs with the umockdev preload reach these emulations through their ioctls.
// Every function is thread-safe; the ioctl handlers run on umockdev's worker thread.
// Functions return 0 on success, or -1 with a message in `error` (at most `error_size` bytes).

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    COATY_EMU_TMP102,
    COATY_EMU_MCP9808,
    COATY_EMU_LM75,
    COATY_EMU_LM75A,
    COATY_EMU_SHT3X,
    COATY_EMU_BME280,
} coaty_emu_chip_model;

typedef enum {
    COATY_EMU_TEMPERATURE,
    COATY_EMU_HUMIDITY,
    COATY_EMU_PRESSURE,
} coaty_emu_quantity;

typedef enum {
    COATY_EMU_FAULT_NONE,
    /// The chip stops acknowledging its address: transfers fail with EREMOTEIO, as on a Raspberry Pi.
    COATY_EMU_FAULT_NO_ACKNOWLEDGE,
    /// Every transfer to the chip fails with EIO.
    COATY_EMU_FAULT_IO_ERROR,
    /// The identification registers read as another part's.
    COATY_EMU_FAULT_WRONG_CHIP_ID,
    /// Checksums the chip sends are wrong.
    COATY_EMU_FAULT_CORRUPT_CHECKSUM,
    /// Measurements on command take a thousand times as long as the datasheet says (SHT3x).
    COATY_EMU_FAULT_SLOW_MEASUREMENT,
    /// The chip holds the bus (its clock line low): a transfer to it does not complete until the fault changes, then
    /// fails with ETIMEDOUT, as the adapter's timeout ends it.
    COATY_EMU_FAULT_HOLDS_BUS,
} coaty_emu_fault;

/// libumockdev's soname. The emulation loads it (and with it GLib) when it starts, not before.
#define COATY_EMU_UMOCKDEV_LIBRARY "libumockdev.so.0"

/// Whether `library` loads and has every call the emulation makes (it stays loaded).
int coaty_emu_check_library(const char *library, char *error, size_t error_size);

/// Loads libumockdev and creates the process's one umockdev testbed. Calling it again does nothing.
int coaty_emu_start(char *error, size_t error_size);

/// Adds /dev/i2c-`number`. Adding an existing bus does nothing.
int coaty_emu_add_i2c_bus(int number, char *error, size_t error_size);

/// Places a chip at a 7-bit address on an emulated bus, powered on with its reset register values and
/// 21.5 °C, 45 %RH, 1013.25 hPa.
int coaty_emu_add_i2c_chip(int bus, int address, coaty_emu_chip_model model, char *error, size_t error_size);

/// Sets the physical value the chip measures from now on (°C, %RH, hPa).
int coaty_emu_set_chip_value(int bus, int address, coaty_emu_quantity quantity, double value, char *error,
                             size_t error_size);

int coaty_emu_set_chip_fault(int bus, int address, coaty_emu_fault fault, char *error, size_t error_size);

/// Counts the bus calls (SMBus calls and I2C_RDWR transfers) that addressed the chip.
int coaty_emu_chip_bus_calls(int bus, int address, uint64_t *count, char *error, size_t error_size);

/// Adds /dev/gpiochip`number` with `lines` lines, all inputs at level low.
int coaty_emu_add_gpio_chip(int number, int lines, const char *label, char *error, size_t error_size);

/// Drives an input line through the given physical levels, one after the other with no time between them;
/// a requester for edge events gets one event per change.
int coaty_emu_gpio_drive(int chip, int line, const bool *levels, size_t count, char *error, size_t error_size);

/// Names a line (as the device tree's gpio-line-names do); unnamed lines are "line<offset>".
int coaty_emu_gpio_name_line(int chip, int line, const char *name, char *error, size_t error_size);

typedef struct coaty_emu_pulse_train coaty_emu_pulse_train;

/// Starts a thread that drives an input line through `count` pulses at `rate` Hz (high for half a period, then low),
/// each edge at its time on the monotonic clock. The line request's event FIFO holds `fifo_depth` events (the
/// kernel's holds 16): an edge that finds it full is dropped and counted.
int coaty_emu_gpio_pulse_train_start(int chip, int line, double rate, uint64_t count, size_t fifo_depth,
                                     coaty_emu_pulse_train **train, char *error, size_t error_size);

/// Waits for the train's last pulse and frees it: how many edge events reached the requester and how many were dropped.
void coaty_emu_gpio_pulse_train_finish(coaty_emu_pulse_train *train, uint64_t *delivered, uint64_t *dropped);

typedef struct {
    bool requested;
    bool output;
    bool active_low;
    /// 0 as is, 1 disabled, 2 pull-up, 3 pull-down.
    int bias;
    /// The physical level: driven by the requester for an output, by `coaty_emu_gpio_drive` for an input.
    bool level;
    char consumer[32];
} coaty_emu_gpio_line_state;

int coaty_emu_gpio_line_state_get(int chip, int line, coaty_emu_gpio_line_state *state, char *error,
                                  size_t error_size);

/// From now on every call on the line's request fails with `error_number` (0 ends the failure); a waiting
/// reader of edge events wakes up to see it.
int coaty_emu_gpio_fail_line(int chip, int line, int error_number, char *error, size_t error_size);

#endif

#ifndef COATY_EDGE_EMULATION_INTERNAL_H
#define COATY_EDGE_EMULATION_INTERNAL_H

#include "CEdgeEmulation.h"

#include <pthread.h>
#include "umockdev_library.h"

// One lock guards every piece of emulated state: the worker thread's handlers and the API callers.
extern pthread_mutex_t coaty_emu_lock;

// A chip model answers the I2C messages addressed to it. `write` and `read` return 0 or a negative errno
// (a NACK is -EREMOTEIO); they run with the lock held.
typedef struct emu_chip emu_chip;

typedef struct {
    void (*power_on)(emu_chip *chip);
    int (*write)(emu_chip *chip, const uint8_t *bytes, size_t count);
    int (*read)(emu_chip *chip, uint8_t *bytes, size_t count);
} emu_chip_model;

struct emu_chip {
    int bus;
    int address;
    coaty_emu_chip_model kind;
    const emu_chip_model *model;
    coaty_emu_fault fault;
    uint64_t calls;
    double temperature;
    double humidity;
    double pressure;
    uint8_t pointer;
    uint8_t registers[256];
    // Measurement state of chips that measure on command (SHT3x, BME280).
    uint64_t ready_at_ns;
    bool measurement_pending;
    uint8_t result[6];
    size_t result_length;
    uint8_t latched_setting;
};

static inline uint16_t emu_get16(const emu_chip *chip, unsigned index) {
    return (uint16_t)(chip->registers[2 * index] << 8 | chip->registers[2 * index + 1]);
}

static inline void emu_set16(emu_chip *chip, unsigned index, uint16_t value) {
    chip->registers[2 * index] = (uint8_t)(value >> 8);
    chip->registers[2 * index + 1] = (uint8_t)(value & 0xFF);
}

static inline long emu_clamp(long value, long minimum, long maximum) {
    return value < minimum ? minimum : value > maximum ? maximum : value;
}

// Reads continue through the bytes of a 16-bit register, MSB first, and repeat it.
static inline void emu_fill16(uint16_t value, uint8_t *bytes, size_t count) {
    for (size_t index = 0; index < count; index++) {
        bytes[index] = index % 2 == 0 ? (uint8_t)(value >> 8) : (uint8_t)(value & 0xFF);
    }
}

extern const emu_chip_model coaty_emu_tmp102;
extern const emu_chip_model coaty_emu_mcp9808;
extern const emu_chip_model coaty_emu_lm75;
extern const emu_chip_model coaty_emu_sht3x;
extern const emu_chip_model coaty_emu_bme280;

uint64_t coaty_emu_monotonic_ns(void);
void coaty_emu_set_error(char *error, size_t error_size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

// Testbed plumbing shared by the I2C and GPIO parts (testbed.c).
UMockdevTestbed *coaty_emu_testbed(void);
UMockdevIoctlBase *coaty_emu_handler(void);

// Device-specific handlers, called on the worker thread without the lock held.
gboolean coaty_emu_i2c_handle_ioctl(UMockdevIoctlClient *client, int bus);
gboolean coaty_emu_gpio_handle_chip_ioctl(UMockdevIoctlClient *client, int chip);
gboolean coaty_emu_gpio_handle_request_ioctl(UMockdevIoctlClient *client);
gboolean coaty_emu_gpio_handle_request_read(UMockdevIoctlClient *client);
void coaty_emu_gpio_request_connected(UMockdevIoctlClient *client);
void coaty_emu_gpio_request_vanished(UMockdevIoctlClient *client);
int coaty_emu_add_node(const char *description, const char *devnode, char *error, size_t error_size);

// Node that every GPIO line request fd is opened on; the handler tells the requests apart by their client.
#define COATY_EMU_GPIO_REQUEST_NODE "/dev/coaty-emulated-gpio-request"

#endif

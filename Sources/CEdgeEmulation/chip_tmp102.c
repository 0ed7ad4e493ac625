// TI TMP102: pointer register (2 bits), 16-bit registers MSB first: temperature, configuration,
// T_LOW, T_HIGH. The temperature is 12-bit two's complement in 0.0625 °C steps, left-aligned; in extended
// mode (configuration EM bit) 13-bit, and bit 0 of the temperature register reads 1.
#include "emulation.h"

#include <math.h>

enum { TEMPERATURE, CONFIGURATION, T_LOW, T_HIGH };
static const uint16_t extended_mode_bit = 0x0010;
static const uint16_t read_only_configuration_bits = 0x6020; // R1 R0 (resolution) and AL

static void power_on(emu_chip *chip) {
    chip->pointer = TEMPERATURE;
    emu_set16(chip, CONFIGURATION, 0x60A0);
    emu_set16(chip, T_LOW, 0x4B00);
    emu_set16(chip, T_HIGH, 0x5000);
}

static uint16_t temperature_register(const emu_chip *chip) {
    long steps = lround(chip->temperature * 16.0);
    if (emu_get16(chip, CONFIGURATION) & extended_mode_bit) {
        return (uint16_t)(((uint16_t)emu_clamp(steps, -4096, 4095) & 0x1FFF) << 3 | 1);
    }
    return (uint16_t)(((uint16_t)emu_clamp(steps, -2048, 2047) & 0x0FFF) << 4);
}

static int handle_write(emu_chip *chip, const uint8_t *bytes, size_t count) {
    if (count == 0) return 0;
    chip->pointer = bytes[0] & 0x03;
    if (count >= 3 && chip->pointer != TEMPERATURE) {
        uint16_t value = (uint16_t)(bytes[1] << 8 | bytes[2]);
        if (chip->pointer == CONFIGURATION) {
            uint16_t old = emu_get16(chip, CONFIGURATION);
            value = (uint16_t)((value & ~read_only_configuration_bits) | (old & read_only_configuration_bits));
        }
        emu_set16(chip, chip->pointer, value);
    }
    return 0;
}

static int handle_read(emu_chip *chip, uint8_t *bytes, size_t count) {
    uint16_t value = chip->pointer == TEMPERATURE ? temperature_register(chip) : emu_get16(chip, chip->pointer);
    emu_fill16(value, bytes, count);
    return 0;
}

const emu_chip_model coaty_emu_tmp102 = {power_on, handle_write, handle_read};

// LM75 (9-bit, 0.5 °C) and NXP LM75A (11-bit, 0.125 °C): pointer register (2 bits); temperature (16-bit,
// two's complement, left-aligned), configuration (8-bit), T_HYST and T_OS (16-bit, 9-bit resolution).
#include "emulation.h"

#include <math.h>

enum { TEMPERATURE, CONFIGURATION, T_HYST, T_OS };

static void power_on(emu_chip *chip) {
    chip->pointer = TEMPERATURE;
    chip->registers[2 * CONFIGURATION] = 0x00;
    emu_set16(chip, T_HYST, 0x4B00);
    emu_set16(chip, T_OS, 0x5000);
}

static uint16_t temperature_register(const emu_chip *chip) {
    if (chip->kind == COATY_EMU_LM75A) {
        long steps = emu_clamp(lround(chip->temperature * 8.0), -1024, 1023);
        return (uint16_t)(((uint16_t)steps & 0x07FF) << 5);
    }
    long steps = emu_clamp(lround(chip->temperature * 2.0), -256, 255);
    return (uint16_t)(((uint16_t)steps & 0x01FF) << 7);
}

static int handle_write(emu_chip *chip, const uint8_t *bytes, size_t count) {
    if (count == 0) return 0;
    chip->pointer = bytes[0] & 0x03;
    if (chip->pointer == CONFIGURATION && count >= 2) {
        chip->registers[2 * CONFIGURATION] = bytes[1] & 0x1F;
    } else if ((chip->pointer == T_HYST || chip->pointer == T_OS) && count >= 3) {
        emu_set16(chip, chip->pointer, (uint16_t)((bytes[1] << 8 | bytes[2]) & 0xFF80));
    }
    return 0;
}

static int handle_read(emu_chip *chip, uint8_t *bytes, size_t count) {
    if (chip->pointer == CONFIGURATION) {
        for (size_t index = 0; index < count; index++) bytes[index] = chip->registers[2 * CONFIGURATION];
        return 0;
    }
    uint16_t value = chip->pointer == TEMPERATURE ? temperature_register(chip) : emu_get16(chip, chip->pointer);
    emu_fill16(value, bytes, count);
    return 0;
}

const emu_chip_model coaty_emu_lm75 = {power_on, handle_write, handle_read};

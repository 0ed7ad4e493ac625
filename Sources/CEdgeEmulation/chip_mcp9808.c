// Microchip MCP9808: pointer register (4 bits); 16-bit registers MSB first. Ambient temperature T_A:
// bits 15..13 alert flags (T_A >= T_CRIT, T_A > T_UPPER, T_A < T_LOWER), bit 12 sign, bits 11..0 in
// 0.0625 °C; manufacturer id 0x0054, device id 0x04 with revision 0x00; 8-bit resolution register.
#include "emulation.h"

#include <math.h>

enum {
    CONFIGURATION = 1,
    T_UPPER = 2,
    T_LOWER = 3,
    T_CRIT = 4,
    T_AMBIENT = 5,
    MANUFACTURER_ID = 6,
    DEVICE_ID = 7,
    RESOLUTION = 8,
};

static void power_on(emu_chip *chip) {
    chip->pointer = T_AMBIENT;
    emu_set16(chip, CONFIGURATION, 0x0000);
    emu_set16(chip, T_UPPER, 0x0000);
    emu_set16(chip, T_LOWER, 0x0000);
    emu_set16(chip, T_CRIT, 0x0000);
    emu_set16(chip, MANUFACTURER_ID, 0x0054);
    emu_set16(chip, DEVICE_ID, 0x0400);
    chip->registers[2 * RESOLUTION] = 0x03;
}

static double limit(const emu_chip *chip, unsigned index) {
    int value = emu_get16(chip, index) & 0x1FFC;
    if (value & 0x1000) value -= 0x2000;
    return value / 16.0;
}

static uint16_t ambient_register(const emu_chip *chip) {
    long steps = emu_clamp(lround(chip->temperature * 16.0), -4096, 4095);
    // Resolution 0.5, 0.25, 0.125 or 0.0625 °C: the bits below it read 0.
    int dropped_bits = 3 - (chip->registers[2 * RESOLUTION] & 0x03);
    uint16_t value = (uint16_t)(((uint16_t)steps & 0x1FFF) & ~((1u << dropped_bits) - 1));
    double measured = (steps >> dropped_bits << dropped_bits) / 16.0;
    if (measured >= limit(chip, T_CRIT)) value |= 0x8000;
    if (measured > limit(chip, T_UPPER)) value |= 0x4000;
    if (measured < limit(chip, T_LOWER)) value |= 0x2000;
    return value;
}

static int handle_write(emu_chip *chip, const uint8_t *bytes, size_t count) {
    if (count == 0) return 0;
    chip->pointer = bytes[0] & 0x0F;
    if (chip->pointer == RESOLUTION && count >= 2) {
        chip->registers[2 * RESOLUTION] = bytes[1] & 0x03;
    } else if (chip->pointer >= CONFIGURATION && chip->pointer <= T_CRIT && count >= 3) {
        uint16_t value = (uint16_t)(bytes[1] << 8 | bytes[2]);
        emu_set16(chip, chip->pointer, chip->pointer == CONFIGURATION ? (value & 0x07FF) : (value & 0x1FFC));
    }
    return 0;
}

static int handle_read(emu_chip *chip, uint8_t *bytes, size_t count) {
    uint16_t value;
    switch (chip->pointer) {
    case T_AMBIENT: value = ambient_register(chip); break;
    case DEVICE_ID: value = chip->fault == COATY_EMU_FAULT_WRONG_CHIP_ID ? 0x0200 : emu_get16(chip, DEVICE_ID); break;
    case RESOLUTION:
        for (size_t index = 0; index < count; index++) bytes[index] = chip->registers[2 * RESOLUTION];
        return 0;
    default: value = chip->pointer <= RESOLUTION ? emu_get16(chip, chip->pointer) : 0x0000;
    }
    emu_fill16(value, bytes, count);
    return 0;
}

const emu_chip_model coaty_emu_mcp9808 = {power_on, handle_write, handle_read};

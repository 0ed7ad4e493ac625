// Sensirion SHT3x: 16-bit commands MSB first, no register pointer. A single-shot measurement answers a
// read with temperature and humidity words, each followed by its CRC-8 (polynomial 0x31, init 0xFF).
// Without clock stretching the chip NACKs reads until the measurement is done.
#include "emulation.h"

#include <errno.h>
#include <math.h>

static const uint16_t status_reset_detected = 0x0010;
static const uint16_t status_heater_on = 0x2000;
static const uint16_t status_alert_pending = 0x8000;

static uint8_t crc8(const uint8_t *bytes, size_t count) {
    uint8_t crc = 0xFF;
    for (size_t index = 0; index < count; index++) {
        crc ^= bytes[index];
        for (int bit = 0; bit < 8; bit++) crc = (uint8_t)(crc & 0x80 ? (crc << 1) ^ 0x31 : crc << 1);
    }
    return crc;
}

static void put_word(emu_chip *chip, size_t offset, uint16_t word) {
    chip->result[offset] = (uint8_t)(word >> 8);
    chip->result[offset + 1] = (uint8_t)(word & 0xFF);
    chip->result[offset + 2] = crc8(chip->result + offset, 2);
    if (chip->fault == COATY_EMU_FAULT_CORRUPT_CHECKSUM) chip->result[offset + 2] ^= 0x01;
}

static void power_on(emu_chip *chip) {
    emu_set16(chip, 0, status_alert_pending | status_reset_detected);
    chip->measurement_pending = false;
    chip->result_length = 0;
}

static void measure(emu_chip *chip, uint64_t duration_ms) {
    long temperature = emu_clamp(lround((chip->temperature + 45.0) * 65535.0 / 175.0), 0, 65535);
    long humidity = emu_clamp(lround(chip->humidity * 65535.0 / 100.0), 0, 65535);
    put_word(chip, 0, (uint16_t)temperature);
    put_word(chip, 3, (uint16_t)humidity);
    chip->result_length = 6;
    chip->measurement_pending = true;
    if (chip->fault == COATY_EMU_FAULT_SLOW_MEASUREMENT) duration_ms *= 1000;
    chip->ready_at_ns = coaty_emu_monotonic_ns() + duration_ms * 1000000u;
}

static int handle_write(emu_chip *chip, const uint8_t *bytes, size_t count) {
    if (count < 2) return 0;
    uint16_t command = (uint16_t)(bytes[0] << 8 | bytes[1]);
    uint16_t status = emu_get16(chip, 0);
    // A new command aborts an unread result.
    chip->result_length = 0;
    chip->measurement_pending = false;
    switch (command) {
    case 0x2400: measure(chip, 15); break; // high repeatability
    case 0x240B: measure(chip, 6); break;  // medium
    case 0x2416: measure(chip, 4); break;  // low
    case 0x2C06:
    case 0x2C0D:
    case 0x2C10: measure(chip, 0); break;  // clock stretching: the read waits for the result
    case 0x30A2: power_on(chip); break;    // soft reset
    case 0x3041: emu_set16(chip, 0, status & ~(status_alert_pending | status_reset_detected)); break;
    case 0x306D: emu_set16(chip, 0, status | status_heater_on); break;
    case 0x3066: emu_set16(chip, 0, status & ~status_heater_on); break;
    case 0x3093: break;                    // break: stops periodic mode, which this emulation lacks
    case 0xF32D:
        put_word(chip, 0, status);
        chip->result_length = 3;
        break;
    default: return -EREMOTEIO;            // the chip does not acknowledge unknown commands
    }
    return 0;
}

static int handle_read(emu_chip *chip, uint8_t *bytes, size_t count) {
    if (chip->result_length == 0) return -EREMOTEIO;
    if (chip->measurement_pending && coaty_emu_monotonic_ns() < chip->ready_at_ns) return -EREMOTEIO;
    for (size_t index = 0; index < count; index++) {
        bytes[index] = index < chip->result_length ? chip->result[index] : 0xFF;
    }
    chip->result_length = 0;
    chip->measurement_pending = false;
    return 0;
}

const emu_chip_model coaty_emu_sht3x = {power_on, handle_write, handle_read};

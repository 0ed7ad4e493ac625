// Bosch BME280: auto-incrementing register reads, register/value pair writes. Chip id 0x60 at 0xD0,
// calibration at 0x88..0xA1 and 0xE1..0xE7, ctrl_hum 0xF2 (applies at the next ctrl_meas write), status
// 0xF3 (bit 3 measuring), ctrl_meas 0xF4, config 0xF5, raw data 0xF7..0xFE. A forced measurement fills the
// data registers after the datasheet's maximum measurement time and returns the chip to sleep mode.
//
// The raw ADC values are found by bisection over the datasheet's integer compensation formulas, so that
// a driver's compensation turns them back into the set values within the chip's resolution.
#include "emulation.h"

#include <math.h>

enum {
    CALIBRATION_LOW = 0x88,
    CALIBRATION_H1 = 0xA1,
    CHIP_ID = 0xD0,
    RESET = 0xE0,
    CALIBRATION_HIGH = 0xE1,
    CTRL_HUM = 0xF2,
    STATUS = 0xF3,
    CTRL_MEAS = 0xF4,
    CONFIG = 0xF5,
    DATA = 0xF7,
};

// A plausible part's calibration; temperature and pressure are the BMP280 datasheet's example values.
static const uint16_t T1 = 27504;
static const int16_t T2 = 26435, T3 = -1000;
static const uint16_t P1 = 36477;
static const int16_t P2 = -10685, P3 = 3024, P4 = 2855, P5 = 140, P6 = -7, P7 = 15500, P8 = -14600, P9 = 6000;
static const uint8_t H1 = 75, H3 = 0;
static const int16_t H2 = 362, H4 = 313, H5 = 50;
static const int8_t H6 = 30;

static int32_t fine_temperature(int32_t adc_T) {
    int32_t var1 = ((((adc_T >> 3) - ((int32_t)T1 << 1))) * ((int32_t)T2)) >> 11;
    int32_t var2 = (((((adc_T >> 4) - ((int32_t)T1)) * ((adc_T >> 4) - ((int32_t)T1))) >> 12) * ((int32_t)T3)) >> 14;
    return var1 + var2;
}

// Pascal in Q24.8.
static int64_t pressure_q24_8(int32_t adc_P, int32_t t_fine) {
    int64_t var1 = ((int64_t)t_fine) - 128000;
    int64_t var2 = var1 * var1 * (int64_t)P6;
    var2 = var2 + ((var1 * (int64_t)P5) * 131072);
    var2 = var2 + (((int64_t)P4) * 34359738368);
    var1 = ((var1 * var1 * (int64_t)P3) >> 8) + ((var1 * (int64_t)P2) * 4096);
    var1 = ((((int64_t)1) * 140737488355328) + var1) * ((int64_t)P1) >> 33;
    if (var1 == 0) return 0;
    int64_t p = 1048576 - adc_P;
    p = (((p * 2147483648) - var2) * 3125) / var1;
    var1 = (((int64_t)P9) * (p >> 13) * (p >> 13)) >> 25;
    var2 = (((int64_t)P8) * p) >> 19;
    return ((p + var1 + var2) >> 8) + (((int64_t)P7) * 16);
}

// %RH in Q22.10. The datasheet computes in 32 bits; 64 bits give the same results without overflow for the
// out-of-range raw values the bisection tries.
static int64_t humidity_q22_10(int32_t adc_H, int32_t t_fine) {
    int64_t v = (int64_t)t_fine - 76800;
    v = (((((int64_t)adc_H * 16384) - ((int64_t)H4 * 1048576) - ((int64_t)H5 * v)) + 16384) >> 15) *
        (((((((v * H6) >> 10) * (((v * H3) >> 11) + 32768)) >> 10) + 2097152) * H2 + 8192) >> 14);
    v = v - (((((v >> 15) * (v >> 15)) >> 7) * H1) >> 4);
    v = v < 0 ? 0 : v;
    v = v > 419430400 ? 419430400 : v;
    return v >> 12;
}

typedef int64_t (*raw_to_value)(int32_t raw, int32_t t_fine);

static int64_t temperature_value(int32_t raw, int32_t t_fine) { (void)t_fine; return fine_temperature(raw); }
static int64_t negative_pressure_value(int32_t raw, int32_t t_fine) { return -pressure_q24_8(raw, t_fine); }
static int64_t humidity_value(int32_t raw, int32_t t_fine) { return humidity_q22_10(raw, t_fine); }

// The raw value in [0, maximum] whose compensated value is nearest the target; `value` rises with `raw`.
static int32_t invert(raw_to_value value, double target, int32_t t_fine, int32_t maximum) {
    int32_t low = 0, high = maximum;
    while (low < high) {
        int32_t middle = low + (high - low) / 2;
        if ((double)value(middle, t_fine) < target) low = middle + 1; else high = middle;
    }
    if (low > 0 && fabs((double)value(low - 1, t_fine) - target) <= fabs((double)value(low, t_fine) - target)) {
        return low - 1;
    }
    return low;
}

static int oversampling(uint8_t setting) {
    return setting == 0 ? 0 : setting >= 5 ? 16 : 1 << (setting - 1);
}

// 16 bits at x1 up to 20 bits at x16: the low bits below the resolution read 0.
static int32_t truncate_to_resolution(int32_t raw, uint8_t setting) {
    int dropped = 4 - (setting >= 5 ? 4 : setting - 1);
    return raw >> dropped << dropped;
}

static void set20(emu_chip *chip, unsigned offset, int32_t raw) {
    chip->registers[offset] = (uint8_t)(raw >> 12);
    chip->registers[offset + 1] = (uint8_t)((raw >> 4) & 0xFF);
    chip->registers[offset + 2] = (uint8_t)((raw & 0x0F) << 4);
}

static void latch_measurement(emu_chip *chip) {
    uint8_t temperature_setting = (chip->registers[CTRL_MEAS] >> 5) & 0x07;
    uint8_t pressure_setting = (chip->registers[CTRL_MEAS] >> 2) & 0x07;
    uint8_t humidity_setting = chip->latched_setting;
    int32_t adc_T = invert(temperature_value, chip->temperature * 5120.0, 0, 0xFFFFF);
    adc_T = temperature_setting ? truncate_to_resolution(adc_T, temperature_setting) : 0x80000;
    int32_t t_fine = fine_temperature(adc_T);
    int32_t adc_P = invert(negative_pressure_value, -chip->pressure * 100.0 * 256.0, t_fine, 0xFFFFF);
    adc_P = pressure_setting ? truncate_to_resolution(adc_P, pressure_setting) : 0x80000;
    int32_t adc_H = humidity_setting ? invert(humidity_value, chip->humidity * 1024.0, t_fine, 0xFFFF) : 0x8000;
    set20(chip, DATA, adc_P);
    set20(chip, DATA + 3, adc_T);
    chip->registers[DATA + 6] = (uint8_t)(adc_H >> 8);
    chip->registers[DATA + 7] = (uint8_t)(adc_H & 0xFF);
}

static void put_le16(emu_chip *chip, unsigned offset, uint16_t value) {
    chip->registers[offset] = (uint8_t)(value & 0xFF);
    chip->registers[offset + 1] = (uint8_t)(value >> 8);
}

static void reset(emu_chip *chip) {
    chip->registers[CTRL_HUM] = 0;
    chip->registers[STATUS] = 0;
    chip->registers[CTRL_MEAS] = 0;
    chip->registers[CONFIG] = 0;
    chip->latched_setting = 0;
    chip->measurement_pending = false;
    set20(chip, DATA, 0x80000);
    set20(chip, DATA + 3, 0x80000);
    chip->registers[DATA + 6] = 0x80;
    chip->registers[DATA + 7] = 0x00;
}

static void power_on(emu_chip *chip) {
    chip->registers[CHIP_ID] = 0x60;
    const uint16_t low[] = {T1, (uint16_t)T2, (uint16_t)T3, P1, (uint16_t)P2, (uint16_t)P3, (uint16_t)P4,
                            (uint16_t)P5, (uint16_t)P6, (uint16_t)P7, (uint16_t)P8, (uint16_t)P9};
    for (unsigned index = 0; index < sizeof low / sizeof low[0]; index++) {
        put_le16(chip, CALIBRATION_LOW + 2 * index, low[index]);
    }
    chip->registers[CALIBRATION_H1] = H1;
    put_le16(chip, CALIBRATION_HIGH, (uint16_t)H2);
    chip->registers[CALIBRATION_HIGH + 2] = H3;
    chip->registers[CALIBRATION_HIGH + 3] = (uint8_t)((H4 >> 4) & 0xFF);
    chip->registers[CALIBRATION_HIGH + 4] = (uint8_t)((H4 & 0x0F) | ((H5 & 0x0F) << 4));
    chip->registers[CALIBRATION_HIGH + 5] = (uint8_t)((H5 >> 4) & 0xFF);
    chip->registers[CALIBRATION_HIGH + 6] = (uint8_t)H6;
    reset(chip);
}

static void start_forced_measurement(emu_chip *chip) {
    uint8_t measure = chip->registers[CTRL_MEAS];
    int t = oversampling((measure >> 5) & 0x07), p = oversampling((measure >> 2) & 0x07);
    int h = oversampling(chip->latched_setting);
    double milliseconds = 1.25 + 2.3 * t + (p ? 2.3 * p + 0.575 : 0) + (h ? 2.3 * h + 0.575 : 0);
    chip->measurement_pending = true;
    chip->ready_at_ns = coaty_emu_monotonic_ns() + (uint64_t)(milliseconds * 1e6);
}

static void advance(emu_chip *chip) {
    if (chip->measurement_pending && coaty_emu_monotonic_ns() >= chip->ready_at_ns) {
        latch_measurement(chip);
        chip->measurement_pending = false;
        chip->registers[CTRL_MEAS] &= 0xFC; // back to sleep mode
    }
    if ((chip->registers[CTRL_MEAS] & 0x03) == 0x03) latch_measurement(chip); // normal mode: always fresh
    chip->registers[STATUS] = chip->measurement_pending ? 0x08 : 0x00;
}

static int handle_write(emu_chip *chip, const uint8_t *bytes, size_t count) {
    if (count == 1) chip->pointer = bytes[0];
    for (size_t index = 0; index + 1 < count; index += 2) {
        uint8_t reg = bytes[index], value = bytes[index + 1];
        chip->pointer = reg;
        if (reg == RESET && value == 0xB6) {
            reset(chip);
        } else if (reg == CTRL_HUM) {
            chip->registers[CTRL_HUM] = value & 0x07;
        } else if (reg == CONFIG) {
            chip->registers[CONFIG] = value & 0xFD;
        } else if (reg == CTRL_MEAS) {
            advance(chip);
            chip->registers[CTRL_MEAS] = value;
            chip->latched_setting = chip->registers[CTRL_HUM];
            uint8_t mode = value & 0x03;
            if (mode == 0x01 || mode == 0x02) start_forced_measurement(chip);
        }
    }
    return 0;
}

static int handle_read(emu_chip *chip, uint8_t *bytes, size_t count) {
    advance(chip);
    for (size_t index = 0; index < count; index++) {
        uint8_t reg = chip->pointer++;
        bytes[index] = reg == CHIP_ID && chip->fault == COATY_EMU_FAULT_WRONG_CHIP_ID ? 0x58 : chip->registers[reg];
    }
    return 0;
}

const emu_chip_model coaty_emu_bme280 = {power_on, handle_write, handle_read};

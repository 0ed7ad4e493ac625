#include "emulation.h"

#include <errno.h>
#include <linux/i2c-dev.h>
#include <linux/i2c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BUSES 256
#define MAX_CHIPS 256

static int buses[MAX_BUSES];
static size_t bus_count;
static emu_chip *chips[MAX_CHIPS];
static size_t chip_count;

// What transfer() returns for a transfer the chip holds (COATY_EMU_FAULT_HOLDS_BUS): the ioctl is left without an
// answer, so its caller blocks as on a hung adapter. Far from any errno.
#define HELD 100000

// The ioctls left without an answer, until their chip's fault changes. Guarded by the lock.
typedef struct held_transfer {
    UMockdevIoctlClient *client;
    int bus;
    int address;
    struct held_transfer *next;
} held_transfer;
static held_transfer *held_transfers;

static bool bus_exists(int number) {
    for (size_t index = 0; index < bus_count; index++) {
        if (buses[index] == number) return true;
    }
    return false;
}

static emu_chip *find_chip(int bus, int address) {
    for (size_t index = 0; index < chip_count; index++) {
        if (chips[index]->bus == bus && chips[index]->address == address) return chips[index];
    }
    return NULL;
}

int coaty_emu_add_i2c_bus(int number, char *error, size_t error_size) {
    if (number < 0 || number > 255) {
        coaty_emu_set_error(error, error_size, "I2C bus number %d is out of range 0...255", number);
        return -1;
    }
    pthread_mutex_lock(&coaty_emu_lock);
    int result = 0;
    if (!bus_exists(number)) {
        if (bus_count == MAX_BUSES) {
            coaty_emu_set_error(error, error_size, "at most %d emulated I2C buses", MAX_BUSES);
            result = -1;
        } else {
            char devnode[32];
            char description[256];
            snprintf(devnode, sizeof devnode, "/dev/i2c-%d", number);
            // The node gets contents so that umockdev makes it a plain file rather than a pty.
            snprintf(description, sizeof description,
                     "P: /devices/platform/coaty-emulated-i2c.%d/i2c-dev/i2c-%d\nN: i2c-%d=00\n"
                     "E: SUBSYSTEM=i2c-dev\nE: DEVNAME=%s\nA: dev=89:%d\nA: name=coaty emulated I2C %d\n",
                     number, number, number, devnode, number, number);
            result = coaty_emu_add_node(description, devnode, error, error_size);
            if (result == 0) buses[bus_count++] = number;
        }
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    return result;
}

static const emu_chip_model *model_for(coaty_emu_chip_model kind) {
    switch (kind) {
    case COATY_EMU_TMP102: return &coaty_emu_tmp102;
    case COATY_EMU_MCP9808: return &coaty_emu_mcp9808;
    case COATY_EMU_LM75:
    case COATY_EMU_LM75A: return &coaty_emu_lm75;
    case COATY_EMU_SHT3X: return &coaty_emu_sht3x;
    case COATY_EMU_BME280: return &coaty_emu_bme280;
    }
    return NULL;
}

int coaty_emu_add_i2c_chip(int bus, int address, coaty_emu_chip_model kind, char *error, size_t error_size) {
    const emu_chip_model *model = model_for(kind);
    if (model == NULL) {
        coaty_emu_set_error(error, error_size, "unknown chip model %d", (int)kind);
        return -1;
    }
    if (address < 0x03 || address > 0x77) {
        coaty_emu_set_error(error, error_size, "I2C address 0x%02x is out of range 0x03...0x77", address);
        return -1;
    }
    pthread_mutex_lock(&coaty_emu_lock);
    int result = -1;
    if (!bus_exists(bus)) {
        coaty_emu_set_error(error, error_size, "no emulated I2C bus %d", bus);
    } else if (find_chip(bus, address) != NULL) {
        coaty_emu_set_error(error, error_size, "address 0x%02x on I2C bus %d is taken", address, bus);
    } else if (chip_count == MAX_CHIPS) {
        coaty_emu_set_error(error, error_size, "at most %d emulated I2C chips", MAX_CHIPS);
    } else {
        emu_chip *chip = calloc(1, sizeof *chip);
        if (chip == NULL) {
            coaty_emu_set_error(error, error_size, "out of memory");
        } else {
            chip->bus = bus;
            chip->address = address;
            chip->kind = kind;
            chip->model = model;
            chip->temperature = 21.5;
            chip->humidity = 45.0;
            chip->pressure = 1013.25;
            model->power_on(chip);
            chips[chip_count++] = chip;
            result = 0;
        }
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    return result;
}

static emu_chip *locked_chip(int bus, int address, char *error, size_t error_size) {
    pthread_mutex_lock(&coaty_emu_lock);
    emu_chip *chip = find_chip(bus, address);
    if (chip == NULL) {
        pthread_mutex_unlock(&coaty_emu_lock);
        coaty_emu_set_error(error, error_size, "no emulated chip at 0x%02x on I2C bus %d", address, bus);
    }
    return chip;
}

int coaty_emu_set_chip_value(int bus, int address, coaty_emu_quantity quantity, double value, char *error,
                             size_t error_size) {
    emu_chip *chip = locked_chip(bus, address, error, error_size);
    if (chip == NULL) return -1;
    switch (quantity) {
    case COATY_EMU_TEMPERATURE: chip->temperature = value; break;
    case COATY_EMU_HUMIDITY: chip->humidity = value; break;
    case COATY_EMU_PRESSURE: chip->pressure = value; break;
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    return 0;
}

int coaty_emu_set_chip_fault(int bus, int address, coaty_emu_fault fault, char *error, size_t error_size) {
    emu_chip *chip = locked_chip(bus, address, error, error_size);
    if (chip == NULL) return -1;
    chip->fault = fault;
    held_transfer *released = NULL;
    if (fault != COATY_EMU_FAULT_HOLDS_BUS) {
        for (held_transfer **link = &held_transfers; *link != NULL;) {
            held_transfer *transfer = *link;
            if (transfer->bus == bus && transfer->address == address) {
                *link = transfer->next;
                transfer->next = released;
                released = transfer;
            } else {
                link = &transfer->next;
            }
        }
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    // The adapter's timeout ends each held transfer (completing is thread-safe in umockdev).
    while (released != NULL) {
        held_transfer *transfer = released;
        released = transfer->next;
        umockdev_ioctl_client_complete(transfer->client, -1, ETIMEDOUT);
        g_object_unref(transfer->client);
        free(transfer);
    }
    return 0;
}

// Leaves the ioctl without an answer while the chip holds the bus; answers it with ETIMEDOUT at once if the fault
// changed since the transfer found it.
static void hold(UMockdevIoctlClient *client, int bus, int address) {
    held_transfer *transfer = calloc(1, sizeof *transfer);
    pthread_mutex_lock(&coaty_emu_lock);
    emu_chip *chip = find_chip(bus, address);
    bool holding = transfer != NULL && chip != NULL && chip->fault == COATY_EMU_FAULT_HOLDS_BUS;
    if (holding) {
        transfer->client = g_object_ref(client);
        transfer->bus = bus;
        transfer->address = address;
        transfer->next = held_transfers;
        held_transfers = transfer;
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    if (!holding) {
        free(transfer);
        umockdev_ioctl_client_complete(client, -1, ETIMEDOUT);
    }
}

int coaty_emu_chip_bus_calls(int bus, int address, uint64_t *count, char *error, size_t error_size) {
    emu_chip *chip = locked_chip(bus, address, error, error_size);
    if (chip == NULL) return -1;
    *count = chip->calls;
    pthread_mutex_unlock(&coaty_emu_lock);
    return 0;
}

// One I2C message on the wire. Returns 0 or a negative errno, as the adapter driver would.
static int transfer(int bus, int address, bool read, uint8_t *bytes, size_t count) {
    pthread_mutex_lock(&coaty_emu_lock);
    emu_chip *chip = find_chip(bus, address);
    int result;
    if (chip == NULL) {
        result = -ENXIO;
    } else {
        if (chip->fault == COATY_EMU_FAULT_NO_ACKNOWLEDGE) {
            result = -EREMOTEIO;
        } else if (chip->fault == COATY_EMU_FAULT_IO_ERROR) {
            result = -EIO;
        } else if (chip->fault == COATY_EMU_FAULT_HOLDS_BUS) {
            result = -HELD;
        } else if (read) {
            result = chip->model->read(chip, bytes, count);
        } else {
            result = chip->model->write(chip, bytes, count);
        }
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    return result;
}

static void count_call(int bus, int address) {
    pthread_mutex_lock(&coaty_emu_lock);
    emu_chip *chip = find_chip(bus, address);
    if (chip != NULL) chip->calls++;
    pthread_mutex_unlock(&coaty_emu_lock);
}

// SMBus transactions as the kernel emulates them on a plain I2C adapter: a command write, then for reads a
// repeated-start read.
static int smbus(int bus, int address, struct i2c_smbus_ioctl_data *request, union i2c_smbus_data *data) {
    uint8_t buffer[I2C_SMBUS_BLOCK_MAX + 2];
    bool reading = request->read_write == I2C_SMBUS_READ;
    int result;
    count_call(bus, address);
    if (request->size != I2C_SMBUS_QUICK && !(request->size == I2C_SMBUS_BYTE && !reading) && data == NULL) {
        return -EINVAL;
    }
    buffer[0] = request->command;
    switch (request->size) {
    case I2C_SMBUS_QUICK:
        return transfer(bus, address, reading, buffer, 0);
    case I2C_SMBUS_BYTE:
        if (!reading) return transfer(bus, address, false, buffer, 1);
        result = transfer(bus, address, true, &data->byte, 1);
        return result;
    case I2C_SMBUS_BYTE_DATA:
        if (!reading) {
            buffer[1] = data->byte;
            return transfer(bus, address, false, buffer, 2);
        }
        result = transfer(bus, address, false, buffer, 1);
        return result < 0 ? result : transfer(bus, address, true, &data->byte, 1);
    case I2C_SMBUS_WORD_DATA:
        if (!reading) {
            buffer[1] = (uint8_t)(data->word & 0xFF);
            buffer[2] = (uint8_t)(data->word >> 8);
            return transfer(bus, address, false, buffer, 3);
        }
        result = transfer(bus, address, false, buffer, 1);
        if (result < 0) return result;
        result = transfer(bus, address, true, buffer, 2);
        if (result == 0) data->word = (uint16_t)(buffer[0] | (buffer[1] << 8));
        return result;
    case I2C_SMBUS_I2C_BLOCK_BROKEN:
    case I2C_SMBUS_I2C_BLOCK_DATA: {
        size_t length = data->block[0];
        if (length == 0 || length > I2C_SMBUS_BLOCK_MAX) return -EINVAL;
        if (!reading) {
            memcpy(buffer + 1, data->block + 1, length);
            return transfer(bus, address, false, buffer, length + 1);
        }
        result = transfer(bus, address, false, buffer, 1);
        return result < 0 ? result : transfer(bus, address, true, data->block + 1, length);
    }
    case I2C_SMBUS_BLOCK_DATA: {
        if (!reading) {
            size_t length = data->block[0];
            if (length == 0 || length > I2C_SMBUS_BLOCK_MAX) return -EINVAL;
            memcpy(buffer + 1, data->block, length + 1);
            return transfer(bus, address, false, buffer, length + 2);
        }
        result = transfer(bus, address, false, buffer, 1);
        if (result < 0) return result;
        result = transfer(bus, address, true, buffer, I2C_SMBUS_BLOCK_MAX + 1);
        if (result < 0) return result;
        if (buffer[0] == 0 || buffer[0] > I2C_SMBUS_BLOCK_MAX) return -EPROTO;
        memcpy(data->block, buffer, (size_t)buffer[0] + 1);
        return 0;
    }
    default:
        return -EOPNOTSUPP;
    }
}

// `held_address` is set to the chip that holds the transfer, if one does.
static int rdwr(int bus, UMockdevIoctlData *arg, int *held_address) {
    GError *failure = NULL;
    UMockdevIoctlData *request = umockdev_ioctl_data_resolve(arg, 0, sizeof(struct i2c_rdwr_ioctl_data), &failure);
    if (request == NULL) {
        g_clear_error(&failure);
        return -EFAULT;
    }
    struct i2c_rdwr_ioctl_data *rdwr_data = (struct i2c_rdwr_ioctl_data *)request->data;
    uint32_t count = rdwr_data->nmsgs;
    int result = 0;
    if (count == 0 || count > I2C_RDWR_IOCTL_MAX_MSGS) {
        result = -EINVAL;
    } else {
        UMockdevIoctlData *messages_data = umockdev_ioctl_data_resolve(
            request, offsetof(struct i2c_rdwr_ioctl_data, msgs), count * sizeof(struct i2c_msg), &failure);
        if (messages_data == NULL) {
            g_clear_error(&failure);
            result = -EFAULT;
        } else {
            for (uint32_t index = 0; index < count && result >= 0; index++) {
                struct i2c_msg *message = (struct i2c_msg *)messages_data->data + index;
                if (message->len > 8192 || (message->flags & I2C_M_TEN)) {
                    result = -EINVAL;
                    break;
                }
                UMockdevIoctlData *buffer = NULL;
                if (message->len > 0) {
                    buffer = umockdev_ioctl_data_resolve(
                        messages_data, index * sizeof(struct i2c_msg) + offsetof(struct i2c_msg, buf), message->len,
                        &failure);
                    if (buffer == NULL) {
                        g_clear_error(&failure);
                        result = -EFAULT;
                        break;
                    }
                }
                // The message struct now points at the local copy, which complete() writes back.
                message = (struct i2c_msg *)messages_data->data + index;
                bool counted = false;
                for (uint32_t earlier = 0; earlier < index; earlier++) {
                    counted = counted || ((struct i2c_msg *)messages_data->data)[earlier].addr == message->addr;
                }
                if (!counted) count_call(bus, message->addr);
                result = transfer(bus, message->addr, (message->flags & I2C_M_RD) != 0,
                                  buffer != NULL ? buffer->data : NULL, message->len);
                if (result == -HELD) *held_address = message->addr;
                if (buffer != NULL) g_object_unref(buffer);
            }
            g_object_unref(messages_data);
        }
    }
    g_object_unref(request);
    return result < 0 ? result : (int)count;
}

gboolean coaty_emu_i2c_handle_ioctl(UMockdevIoctlClient *client, int bus) {
    UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(client);
    unsigned long request = umockdev_ioctl_client_get_request(client);
    // The selected address belongs to the open file, as in i2c-dev; 0 until I2C_SLAVE.
    int address = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(client), "coaty-i2c-address"));
    int result;
    switch (request) {
    case I2C_SLAVE:
    case I2C_SLAVE_FORCE: {
        unsigned long value = *(unsigned long *)arg->data;
        // Like the kernel: no bus traffic, so an absent chip shows only on the first transfer.
        if (value > 0x7F) {
            result = -EINVAL;
        } else {
            g_object_set_data(G_OBJECT(client), "coaty-i2c-address", GINT_TO_POINTER((int)value));
            result = 0;
        }
        break;
    }
    case I2C_FUNCS: {
        GError *failure = NULL;
        UMockdevIoctlData *functions = umockdev_ioctl_data_resolve(arg, 0, sizeof(unsigned long), &failure);
        if (functions == NULL) {
            g_clear_error(&failure);
            result = -EFAULT;
        } else {
            *(unsigned long *)functions->data = I2C_FUNC_I2C | I2C_FUNC_SMBUS_EMUL;
            g_object_unref(functions);
            result = 0;
        }
        break;
    }
    case I2C_RETRIES:
    case I2C_TIMEOUT:
        result = 0;
        break;
    case I2C_SMBUS: {
        GError *failure = NULL;
        UMockdevIoctlData *request_data =
            umockdev_ioctl_data_resolve(arg, 0, sizeof(struct i2c_smbus_ioctl_data), &failure);
        if (request_data == NULL) {
            g_clear_error(&failure);
            result = -EFAULT;
            break;
        }
        struct i2c_smbus_ioctl_data *smbus_request = (struct i2c_smbus_ioctl_data *)request_data->data;
        UMockdevIoctlData *payload = umockdev_ioctl_data_resolve(
            request_data, offsetof(struct i2c_smbus_ioctl_data, data), sizeof(union i2c_smbus_data), &failure);
        g_clear_error(&failure);
        smbus_request = (struct i2c_smbus_ioctl_data *)request_data->data;
        result = smbus(bus, address, smbus_request, payload != NULL ? (union i2c_smbus_data *)payload->data : NULL);
        if (payload != NULL) g_object_unref(payload);
        g_object_unref(request_data);
        break;
    }
    case I2C_RDWR:
        result = rdwr(bus, arg, &address);
        break;
    default:
        result = -ENOTTY;
    }
    if (result == -HELD) {
        hold(client, bus, address);
    } else if (result < 0) {
        umockdev_ioctl_client_complete(client, -1, -result);
    } else {
        umockdev_ioctl_client_complete(client, result, 0);
    }
    return TRUE;
}

#include <i2c/smbus.h>
#include <linux/i2c-dev.h>
#include <sys/ioctl.h>

// ioctl is variadic, which Swift cannot call.
static inline int coaty_i2c_set_slave_address(int fd, int address) {
    return ioctl(fd, I2C_SLAVE, address);
}

static inline int coaty_i2c_transfer(int fd, struct i2c_rdwr_ioctl_data *transfer) {
    return ioctl(fd, I2C_RDWR, transfer);
}

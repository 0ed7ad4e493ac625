#include "emulation.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

pthread_mutex_t coaty_emu_lock = PTHREAD_MUTEX_INITIALIZER;

static UMockdevTestbed *testbed;
static UMockdevIoctlBase *handler;

UMockdevTestbed *coaty_emu_testbed(void) { return testbed; }
UMockdevIoctlBase *coaty_emu_handler(void) { return handler; }

uint64_t coaty_emu_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

void coaty_emu_set_error(char *error, size_t error_size, const char *format, ...) {
    if (error == NULL || error_size == 0) return;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error, error_size, format, arguments);
    va_end(arguments);
}

static bool parse_node(const char *devnode, const char *prefix, int *number) {
    size_t length = strlen(prefix);
    if (strncmp(devnode, prefix, length) != 0) return false;
    char *end = NULL;
    long value = strtol(devnode + length, &end, 10);
    if (end == devnode + length || *end != '\0' || value < 0 || value > 1000000) return false;
    *number = (int)value;
    return true;
}

static gboolean on_ioctl(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer user_data) {
    (void)base;
    (void)user_data;
    const char *devnode = umockdev_ioctl_client_get_devnode(client);
    int number;
    if (strcmp(devnode, COATY_EMU_GPIO_REQUEST_NODE) == 0) return coaty_emu_gpio_handle_request_ioctl(client);
    if (parse_node(devnode, "/dev/i2c-", &number)) return coaty_emu_i2c_handle_ioctl(client, number);
    if (parse_node(devnode, "/dev/gpiochip", &number)) return coaty_emu_gpio_handle_chip_ioctl(client, number);
    umockdev_ioctl_client_complete(client, -1, ENOTTY);
    return TRUE;
}

static gboolean on_read(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer user_data) {
    (void)base;
    (void)user_data;
    if (strcmp(umockdev_ioctl_client_get_devnode(client), COATY_EMU_GPIO_REQUEST_NODE) == 0) {
        return coaty_emu_gpio_handle_request_read(client);
    }
    umockdev_ioctl_client_complete(client, -1, EINVAL);
    return TRUE;
}

static gboolean on_write(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer user_data) {
    (void)base;
    (void)user_data;
    umockdev_ioctl_client_complete(client, -1, EINVAL);
    return TRUE;
}

static void on_client_finalized(gpointer user_data, GObject *client) {
    (void)user_data;
    coaty_emu_gpio_request_vanished((UMockdevIoctlClient *)client);
}

static void on_client_connected(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer user_data) {
    (void)base;
    (void)user_data;
    if (strcmp(umockdev_ioctl_client_get_devnode(client), COATY_EMU_GPIO_REQUEST_NODE) != 0) return;
    coaty_emu_gpio_request_connected(client);
    // umockdev 0.17 never emits client-vanished, nor a notification when the client's stream closes; the
    // client object goes away once the requester has closed its fd, and that releases the lines.
    g_object_weak_ref(G_OBJECT(client), on_client_finalized, NULL);
}

static void stop_testbed(void) {
    // Removes the testbed's temporary directory.
    if (testbed != NULL) g_object_unref(testbed);
    testbed = NULL;
}

int coaty_emu_start(char *error, size_t error_size) {
    pthread_mutex_lock(&coaty_emu_lock);
    int result = 0;
    if (testbed == NULL && coaty_emu_load_library(error, error_size) != 0) {
        result = -1;
    } else if (testbed == NULL) {
        testbed = umockdev_testbed_new();
        handler = umockdev_ioctl_base_new();
        g_signal_connect(handler, "handle-ioctl", G_CALLBACK(on_ioctl), NULL);
        g_signal_connect(handler, "handle-read", G_CALLBACK(on_read), NULL);
        g_signal_connect(handler, "handle-write", G_CALLBACK(on_write), NULL);
        g_signal_connect(handler, "client-connected", G_CALLBACK(on_client_connected), NULL);

        gchar *root = umockdev_testbed_get_root_dir(testbed);
        gchar *node = g_build_filename(root, COATY_EMU_GPIO_REQUEST_NODE, NULL);
        gchar *directory = g_path_get_dirname(node);
        g_mkdir_with_parents(directory, 0755);
        g_free(directory);
        GError *failure = NULL;
        if (!g_file_set_contents(node, "", 0, &failure)
            || !umockdev_testbed_attach_ioctl(testbed, COATY_EMU_GPIO_REQUEST_NODE, handler, &failure)) {
            coaty_emu_set_error(error, error_size, "cannot set up the umockdev testbed: %s", failure->message);
            g_error_free(failure);
            result = -1;
        }
        g_free(node);
        g_free(root);
        atexit(stop_testbed);
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    return result;
}

// Adds a device node with its sysfs entry and serves its ioctls. Called with the lock held.
int coaty_emu_add_node(const char *description, const char *devnode, char *error, size_t error_size) {
    if (testbed == NULL) {
        coaty_emu_set_error(error, error_size, "the emulation is not started");
        return -1;
    }
    GError *failure = NULL;
    if (!umockdev_testbed_add_from_string(testbed, description, &failure)
        || !umockdev_testbed_attach_ioctl(testbed, devnode, handler, &failure)) {
        coaty_emu_set_error(error, error_size, "cannot add %s to the testbed: %s", devnode, failure->message);
        g_error_free(failure);
        return -1;
    }
    return 0;
}

#ifndef COATY_EDGE_UMOCKDEV_LIBRARY_H
#define COATY_EDGE_UMOCKDEV_LIBRARY_H

// libumockdev and the GLib calls the emulation makes, loaded with dlopen when an emulation starts: an agent that
// drives real hardware neither maps libumockdev, GLib, GIO and their dependencies nor needs them installed, and
// building needs none of their headers. The types below mirror the libraries' public ABI, which the emulation
// relies on: GObject's instance layout, GError, and umockdev's UMockdevIoctlData.

#include <stddef.h>
#include <stdint.h>

typedef int gboolean;
typedef void *gpointer;
typedef char gchar;

#define TRUE 1
#define FALSE 0

typedef struct {
    void *g_class;
    unsigned int ref_count;
    void *qdata;
} GObject;

typedef struct {
    uint32_t domain;
    int code;
    gchar *message;
} GError;

typedef struct _UMockdevTestbed UMockdevTestbed;
typedef struct _UMockdevIoctlBase UMockdevIoctlBase;
typedef struct _UMockdevIoctlClient UMockdevIoctlClient;

typedef struct {
    GObject parent_instance;
    uint8_t *data;
    int data_len;
    unsigned long client_addr;
    void *priv;
} UMockdevIoctlData;

typedef void (*GCallback)(void);
typedef void (*GWeakNotify)(gpointer data, GObject *where_the_object_was);

#define G_OBJECT(object) ((GObject *)(object))
#define G_CALLBACK(function) ((GCallback)(function))
#define GPOINTER_TO_INT(pointer) ((int)(intptr_t)(pointer))
#define GINT_TO_POINTER(value) ((gpointer)(intptr_t)(value))

typedef struct {
    UMockdevTestbed *(*testbed_new)(void);
    gchar *(*testbed_get_root_dir)(UMockdevTestbed *testbed);
    gboolean (*testbed_add_from_string)(UMockdevTestbed *testbed, const gchar *data, GError **error);
    gboolean (*testbed_attach_ioctl)(UMockdevTestbed *testbed, const gchar *dev, UMockdevIoctlBase *handler, GError **error);
    UMockdevIoctlBase *(*ioctl_base_new)(void);
    const gchar *(*ioctl_client_get_devnode)(UMockdevIoctlClient *client);
    unsigned long (*ioctl_client_get_request)(UMockdevIoctlClient *client);
    UMockdevIoctlData *(*ioctl_client_get_arg)(UMockdevIoctlClient *client);
    void (*ioctl_client_complete)(UMockdevIoctlClient *client, long result, int error_number);
    UMockdevIoctlData *(*ioctl_data_resolve)(UMockdevIoctlData *data, size_t offset, size_t length, GError **error);
    unsigned long (*signal_connect_data)(gpointer instance, const gchar *signal, GCallback handler, gpointer data,
                                         void (*destroy_data)(gpointer, void *), int flags);
    gpointer (*object_ref)(gpointer object);
    void (*object_unref)(gpointer object);
    void (*object_weak_ref)(GObject *object, GWeakNotify notify, gpointer data);
    void (*object_set_data)(GObject *object, const gchar *key, gpointer data);
    gpointer (*object_get_data)(GObject *object, const gchar *key);
    void (*free)(gpointer memory);
    void (*error_free)(GError *error);
    void (*clear_error)(GError **error);
    gchar *(*build_filename)(const gchar *first, ...);
    gchar *(*path_get_dirname)(const gchar *path);
    int (*mkdir_with_parents)(const gchar *path, int mode);
    gboolean (*file_set_contents)(const gchar *path, const gchar *contents, long length, GError **error);
} coaty_emu_library_calls;

// Filled by coaty_emu_load_library; read-only afterwards.
extern coaty_emu_library_calls coaty_emu_library;

// Loads libumockdev and resolves every call above; 0 or -1 with the reason in `error`. Once loaded, later calls
// return 0 at once. Called with coaty_emu_lock held.
int coaty_emu_load_library(char *error, size_t error_size);

#define umockdev_testbed_new coaty_emu_library.testbed_new
#define umockdev_testbed_get_root_dir coaty_emu_library.testbed_get_root_dir
#define umockdev_testbed_add_from_string coaty_emu_library.testbed_add_from_string
#define umockdev_testbed_attach_ioctl coaty_emu_library.testbed_attach_ioctl
#define umockdev_ioctl_base_new coaty_emu_library.ioctl_base_new
#define umockdev_ioctl_client_get_devnode coaty_emu_library.ioctl_client_get_devnode
#define umockdev_ioctl_client_get_request coaty_emu_library.ioctl_client_get_request
#define umockdev_ioctl_client_get_arg coaty_emu_library.ioctl_client_get_arg
#define umockdev_ioctl_client_complete coaty_emu_library.ioctl_client_complete
#define umockdev_ioctl_data_resolve coaty_emu_library.ioctl_data_resolve
#define g_signal_connect(instance, signal, handler, data) \
    coaty_emu_library.signal_connect_data((instance), (signal), (handler), (data), NULL, 0)
#define g_object_ref coaty_emu_library.object_ref
#define g_object_unref coaty_emu_library.object_unref
#define g_object_weak_ref coaty_emu_library.object_weak_ref
#define g_object_set_data coaty_emu_library.object_set_data
#define g_object_get_data coaty_emu_library.object_get_data
#define g_free coaty_emu_library.free
#define g_error_free coaty_emu_library.error_free
#define g_clear_error coaty_emu_library.clear_error
#define g_build_filename coaty_emu_library.build_filename
#define g_path_get_dirname coaty_emu_library.path_get_dirname
#define g_mkdir_with_parents coaty_emu_library.mkdir_with_parents
#define g_file_set_contents coaty_emu_library.file_set_contents

#endif

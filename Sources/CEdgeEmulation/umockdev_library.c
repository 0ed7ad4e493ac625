#include "emulation.h"

#include <dlfcn.h>

coaty_emu_library_calls coaty_emu_library;

static bool loaded;

static int resolve(const char *library, coaty_emu_library_calls *resolved, char *error, size_t error_size) {
    // Never closed once resolved: GLib's type system cannot be unloaded.
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        coaty_emu_set_error(error, error_size, "cannot load %s (is umockdev installed?): %s", library, dlerror());
        return -1;
    }
    coaty_emu_library_calls calls;
    // Symbols are looked up in the library and, for GLib's, in the libraries it depends on.
    struct {
        void **slot;
        const char *name;
    } symbols[] = {
        {(void **)&calls.testbed_new, "umockdev_testbed_new"},
        {(void **)&calls.testbed_get_root_dir, "umockdev_testbed_get_root_dir"},
        {(void **)&calls.testbed_add_from_string, "umockdev_testbed_add_from_string"},
        {(void **)&calls.testbed_attach_ioctl, "umockdev_testbed_attach_ioctl"},
        {(void **)&calls.ioctl_base_new, "umockdev_ioctl_base_new"},
        {(void **)&calls.ioctl_client_get_devnode, "umockdev_ioctl_client_get_devnode"},
        {(void **)&calls.ioctl_client_get_request, "umockdev_ioctl_client_get_request"},
        {(void **)&calls.ioctl_client_get_arg, "umockdev_ioctl_client_get_arg"},
        {(void **)&calls.ioctl_client_complete, "umockdev_ioctl_client_complete"},
        {(void **)&calls.ioctl_data_resolve, "umockdev_ioctl_data_resolve"},
        {(void **)&calls.signal_connect_data, "g_signal_connect_data"},
        {(void **)&calls.object_ref, "g_object_ref"},
        {(void **)&calls.object_unref, "g_object_unref"},
        {(void **)&calls.object_weak_ref, "g_object_weak_ref"},
        {(void **)&calls.object_set_data, "g_object_set_data"},
        {(void **)&calls.object_get_data, "g_object_get_data"},
        {(void **)&calls.free, "g_free"},
        {(void **)&calls.error_free, "g_error_free"},
        {(void **)&calls.clear_error, "g_clear_error"},
        {(void **)&calls.build_filename, "g_build_filename"},
        {(void **)&calls.path_get_dirname, "g_path_get_dirname"},
        {(void **)&calls.mkdir_with_parents, "g_mkdir_with_parents"},
        {(void **)&calls.file_set_contents, "g_file_set_contents"},
    };
    for (size_t index = 0; index < sizeof symbols / sizeof symbols[0]; index++) {
        *symbols[index].slot = dlsym(handle, symbols[index].name);
        if (*symbols[index].slot == NULL) {
            coaty_emu_set_error(error, error_size, "%s lacks %s", library, symbols[index].name);
            dlclose(handle);
            return -1;
        }
    }
    *resolved = calls;
    return 0;
}

int coaty_emu_check_library(const char *library, char *error, size_t error_size) {
    coaty_emu_library_calls calls;
    return resolve(library, &calls, error, error_size);
}

// Called with coaty_emu_lock held.
int coaty_emu_load_library(char *error, size_t error_size) {
    if (loaded) return 0;
    if (resolve(COATY_EMU_UMOCKDEV_LIBRARY, &coaty_emu_library, error, error_size) != 0) return -1;
    loaded = true;
    return 0;
}

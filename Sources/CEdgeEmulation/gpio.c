// GPIO character devices with the v1 uapi that libgpiod 1.6 speaks: chip and line info, line handles
// (values) and line event requests (edge events). Every request fd is a second emulated node opened by the
// handler itself; an event request's fd is then swapped for the read end of a pipe so that poll() on it
// reports the events the emulation writes into the pipe, while reads and ioctls on it still come here.
#define _GNU_SOURCE // pipe2, dup3
#include "emulation.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/gpio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <time.h>

#define MAX_CHIPS 64
#define MAX_LINES 256

typedef struct {
    bool requested;
    bool output;
    bool active_low;
    int bias;
    bool level;
    int failure;
    char consumer[32];
    char name[32]; // empty: "line<offset>"
} line_state;

typedef struct {
    int number;
    int line_count;
    char label[32];
    line_state *lines;
} gpio_chip;

typedef struct line_request {
    UMockdevIoctlClient *client; // NULL until the handler's open() is accepted
    int chip;
    uint32_t offsets[GPIOHANDLES_MAX];
    uint32_t count;
    bool events;
    uint32_t event_flags;
    int event_pipe[2];
    struct line_request *next;
} line_request;

static gpio_chip chips[MAX_CHIPS];
static size_t chip_count;
static line_request *requests;

static gpio_chip *find_chip(int number) {
    for (size_t index = 0; index < chip_count; index++) {
        if (chips[index].number == number) return &chips[index];
    }
    return NULL;
}

/// Line `line` of chip `number`, with the lock held; NULL with the reason in `error` when there is no such line, or
/// when `input` and the line is requested as an output.
static line_state *find_line(int number, int line, bool input, char *error, size_t error_size) {
    gpio_chip *chip = find_chip(number);
    if (chip == NULL) {
        coaty_emu_set_error(error, error_size, "no emulated GPIO chip %d", number);
    } else if (line < 0 || line >= chip->line_count) {
        coaty_emu_set_error(error, error_size, "GPIO chip %d has no line %d", number, line);
    } else if (input && chip->lines[line].requested && chip->lines[line].output) {
        coaty_emu_set_error(error, error_size, "line %d of GPIO chip %d is an output", line, number);
    } else {
        return &chip->lines[line];
    }
    return NULL;
}

static line_request *find_request(UMockdevIoctlClient *client) {
    for (line_request *request = requests; request != NULL; request = request->next) {
        if (request->client == client) return request;
    }
    return NULL;
}

static line_request *find_event_request(int chip, int line) {
    for (line_request *request = requests; request != NULL; request = request->next) {
        if (request->events && request->chip == chip && request->offsets[0] == (uint32_t)line) return request;
    }
    return NULL;
}

int coaty_emu_add_gpio_chip(int number, int lines, const char *label, char *error, size_t error_size) {
    if (number < 0 || number > 255 || lines < 1 || lines > MAX_LINES) {
        coaty_emu_set_error(error, error_size, "GPIO chip %d with %d lines: number must be in 0...255 and lines in 1...%d",
                            number, lines, MAX_LINES);
        return -1;
    }
    pthread_mutex_lock(&coaty_emu_lock);
    int result = -1;
    if (find_chip(number) != NULL) {
        coaty_emu_set_error(error, error_size, "GPIO chip %d exists", number);
    } else if (chip_count == MAX_CHIPS) {
        coaty_emu_set_error(error, error_size, "at most %d emulated GPIO chips", MAX_CHIPS);
    } else {
        char devnode[32];
        char description[320];
        snprintf(devnode, sizeof devnode, "/dev/gpiochip%d", number);
        // libgpiod compares the node's device number with the sysfs "dev" attribute, newline included.
        snprintf(description, sizeof description,
                 "P: /devices/platform/coaty-emulated-gpio.%d/gpiochip%d\nN: gpiochip%d=00\nE: SUBSYSTEM=gpio\n"
                 "E: DEVNAME=%s\nA: dev=254:%d\\n\n",
                 number, number, number, devnode, number);
        line_state *states = calloc((size_t)lines, sizeof *states);
        if (states == NULL) {
            coaty_emu_set_error(error, error_size, "out of memory");
        } else if (coaty_emu_add_node(description, devnode, error, error_size) != 0) {
            free(states);
        } else {
            gpio_chip *chip = &chips[chip_count++];
            chip->number = number;
            chip->line_count = lines;
            snprintf(chip->label, sizeof chip->label, "%s", label);
            chip->lines = states;
            result = 0;
        }
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    return result;
}

static void write_events(line_request *request, const struct gpioevent_data *events, size_t count) {
    if (count == 0) return;
    // One write, so that a reader sees a bounce as it happened: all at once.
    ssize_t written = write(request->event_pipe[1], events, count * sizeof *events);
    (void)written; // a full pipe drops events, as the kernel's event FIFO does
}

int coaty_emu_gpio_drive(int number, int line, const bool *levels, size_t count, char *error, size_t error_size) {
    pthread_mutex_lock(&coaty_emu_lock);
    line_state *state = find_line(number, line, true, error, error_size);
    int result = -1;
    if (state != NULL) {
        line_request *request = find_event_request(number, line);
        struct gpioevent_data events[64];
        size_t event_count = 0;
        for (size_t index = 0; index < count; index++) {
            if (levels[index] == state->level) continue;
            state->level = levels[index];
            if (request == NULL) continue;
            bool active = state->level != state->active_low;
            uint32_t id = active ? GPIOEVENT_EVENT_RISING_EDGE : GPIOEVENT_EVENT_FALLING_EDGE;
            uint32_t wanted = active ? GPIOEVENT_REQUEST_RISING_EDGE : GPIOEVENT_REQUEST_FALLING_EDGE;
            if (!(request->event_flags & wanted)) continue;
            if (event_count == sizeof events / sizeof events[0]) {
                write_events(request, events, event_count);
                event_count = 0;
            }
            memset(&events[event_count], 0, sizeof events[event_count]);
            events[event_count].timestamp = coaty_emu_monotonic_ns();
            events[event_count].id = id;
            event_count++;
        }
        if (request != NULL) write_events(request, events, event_count);
        result = 0;
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    return result;
}

int coaty_emu_gpio_name_line(int number, int line, const char *name, char *error, size_t error_size) {
    pthread_mutex_lock(&coaty_emu_lock);
    line_state *state = find_line(number, line, false, error, error_size);
    int result = -1;
    if (state != NULL) {
        snprintf(state->name, sizeof state->name, "%s", name);
        result = 0;
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    return result;
}


typedef struct {
    int chip;
    int line;
    double rate;
    uint64_t count;
    size_t fifo_depth;
    pthread_t thread;
    uint64_t delivered;
    uint64_t dropped;
} pulse_train;

// One edge of a pulse train: the level changes and, if the FIFO has room, the requester gets the event.
static void train_edge(pulse_train *train, bool level) {
    pthread_mutex_lock(&coaty_emu_lock);
    gpio_chip *chip = find_chip(train->chip);
    if (chip != NULL) {
        line_state *state = &chip->lines[train->line];
        state->level = level;
        line_request *request = find_event_request(train->chip, train->line);
        bool active = level != state->active_low;
        uint32_t wanted = active ? GPIOEVENT_REQUEST_RISING_EDGE : GPIOEVENT_REQUEST_FALLING_EDGE;
        if (request != NULL && (request->event_flags & wanted)) {
            int pending = 0;
            ioctl(request->event_pipe[0], FIONREAD, &pending);
            if ((size_t)pending / sizeof(struct gpioevent_data) >= train->fifo_depth) {
                train->dropped++;
            } else {
                struct gpioevent_data event;
                memset(&event, 0, sizeof event);
                event.timestamp = coaty_emu_monotonic_ns();
                event.id = active ? GPIOEVENT_EVENT_RISING_EDGE : GPIOEVENT_EVENT_FALLING_EDGE;
                if (write(request->event_pipe[1], &event, sizeof event) == (ssize_t)sizeof event) train->delivered++;
                else train->dropped++;
            }
        }
    }
    pthread_mutex_unlock(&coaty_emu_lock);
}

static void add_nanoseconds(struct timespec *time, uint64_t nanoseconds) {
    uint64_t total = (uint64_t)time->tv_nsec + nanoseconds;
    time->tv_sec += (time_t)(total / 1000000000u);
    time->tv_nsec = (long)(total % 1000000000u);
}

static void *run_train(void *argument) {
    pulse_train *train = argument;
    uint64_t half_period = (uint64_t)(500000000.0 / train->rate);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (uint64_t pulse = 0; pulse < train->count; pulse++) {
        add_nanoseconds(&next, half_period);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {}
        train_edge(train, true);
        add_nanoseconds(&next, half_period);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {}
        train_edge(train, false);
    }
    return NULL;
}

int coaty_emu_gpio_pulse_train_start(int number, int line, double rate, uint64_t count, size_t fifo_depth,
                                     coaty_emu_pulse_train **out, char *error, size_t error_size) {
    if (!(rate > 0 && rate <= 1000000)) {
        coaty_emu_set_error(error, error_size, "a pulse rate must be in (0, 1000000] Hz, not %g", rate);
        return -1;
    }
    if (fifo_depth < 1 || fifo_depth > 4096) {
        coaty_emu_set_error(error, error_size, "an event FIFO holds 1...4096 events, not %zu", fifo_depth);
        return -1;
    }
    pthread_mutex_lock(&coaty_emu_lock);
    line_state *state = find_line(number, line, true, error, error_size);
    int result = -1;
    if (state != NULL) {
        state->level = false;
        result = 0;
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    if (result != 0) return -1;
    pulse_train *train = calloc(1, sizeof *train);
    if (train == NULL) {
        coaty_emu_set_error(error, error_size, "out of memory");
        return -1;
    }
    train->chip = number;
    train->line = line;
    train->rate = rate;
    train->count = count;
    train->fifo_depth = fifo_depth;
    int failure = pthread_create(&train->thread, NULL, run_train, train);
    if (failure != 0) {
        free(train);
        coaty_emu_set_error(error, error_size, "cannot start a pulse train thread: %s", strerror(failure));
        return -1;
    }
    *out = (coaty_emu_pulse_train *)train;
    return 0;
}

void coaty_emu_gpio_pulse_train_finish(coaty_emu_pulse_train *handle, uint64_t *delivered, uint64_t *dropped) {
    pulse_train *train = (pulse_train *)handle;
    pthread_join(train->thread, NULL);
    *delivered = train->delivered;
    *dropped = train->dropped;
    free(train);
}

int coaty_emu_gpio_line_state_get(int number, int line, coaty_emu_gpio_line_state *state, char *error,
                                  size_t error_size) {
    pthread_mutex_lock(&coaty_emu_lock);
    const line_state *source = find_line(number, line, false, error, error_size);
    int result = -1;
    if (source != NULL) {
        state->requested = source->requested;
        state->output = source->output;
        state->active_low = source->active_low;
        state->bias = source->bias;
        state->level = source->level;
        snprintf(state->consumer, sizeof state->consumer, "%s", source->consumer);
        result = 0;
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    return result;
}

int coaty_emu_gpio_fail_line(int number, int line, int error_number, char *error, size_t error_size) {
    pthread_mutex_lock(&coaty_emu_lock);
    line_state *state = find_line(number, line, false, error, error_size);
    int result = -1;
    if (state != NULL) {
        state->failure = error_number;
        line_request *request = find_event_request(number, line);
        if (request != NULL && error_number != 0) {
            struct gpioevent_data wake;
            memset(&wake, 0, sizeof wake);
            write_events(request, &wake, 1);
        }
        result = 0;
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    return result;
}

static int bias_of(uint32_t flags) {
    int bias = 0;
    int choices = 0;
    if (flags & GPIOHANDLE_REQUEST_BIAS_DISABLE) bias = 1, choices++;
    if (flags & GPIOHANDLE_REQUEST_BIAS_PULL_UP) bias = 2, choices++;
    if (flags & GPIOHANDLE_REQUEST_BIAS_PULL_DOWN) bias = 3, choices++;
    return choices > 1 ? -1 : bias;
}

static void fill_line_info(const gpio_chip *chip, struct gpioline_info *info) {
    const line_state *state = &chip->lines[info->line_offset];
    info->flags = 0;
    if (state->requested) info->flags |= GPIOLINE_FLAG_KERNEL;
    if (state->output) info->flags |= GPIOLINE_FLAG_IS_OUT;
    if (state->active_low) info->flags |= GPIOLINE_FLAG_ACTIVE_LOW;
    if (state->bias == 1) info->flags |= GPIOLINE_FLAG_BIAS_DISABLE;
    if (state->bias == 2) info->flags |= GPIOLINE_FLAG_BIAS_PULL_UP;
    if (state->bias == 3) info->flags |= GPIOLINE_FLAG_BIAS_PULL_DOWN;
    if (state->name[0] != '\0') snprintf(info->name, sizeof info->name, "%s", state->name);
    else snprintf(info->name, sizeof info->name, "line%u", info->line_offset);
    snprintf(info->consumer, sizeof info->consumer, "%s", state->consumer);
}

// Opens the fd that the requester gets; the request waits for its client in the list. Lock held.
static int open_request(line_request *request) {
    int fd = open(COATY_EMU_GPIO_REQUEST_NODE, O_RDWR | O_CLOEXEC);
    if (fd < 0) return -errno;
    if (request->events) {
        if (pipe2(request->event_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
            int failure = errno;
            close(fd);
            return -failure;
        }
        if (dup3(request->event_pipe[0], fd, O_CLOEXEC) < 0) {
            int failure = errno;
            close(request->event_pipe[0]);
            close(request->event_pipe[1]);
            close(fd);
            return -failure;
        }
    }
    request->next = requests;
    requests = request;
    return fd;
}

static void claim(gpio_chip *chip, uint32_t offset, uint32_t flags, const char *consumer) {
    line_state *state = &chip->lines[offset];
    state->requested = true;
    state->output = (flags & GPIOHANDLE_REQUEST_OUTPUT) != 0;
    state->active_low = (flags & GPIOHANDLE_REQUEST_ACTIVE_LOW) != 0;
    state->bias = bias_of(flags);
    snprintf(state->consumer, sizeof state->consumer, "%s", consumer);
}

static int line_handle(gpio_chip *chip, struct gpiohandle_request *handle) {
    uint32_t direction = handle->flags & (GPIOHANDLE_REQUEST_INPUT | GPIOHANDLE_REQUEST_OUTPUT);
    if (handle->lines == 0 || handle->lines > GPIOHANDLES_MAX || direction == (GPIOHANDLE_REQUEST_INPUT | GPIOHANDLE_REQUEST_OUTPUT)
        || bias_of(handle->flags) < 0) {
        return -EINVAL;
    }
    for (uint32_t index = 0; index < handle->lines; index++) {
        if (handle->lineoffsets[index] >= (uint32_t)chip->line_count) return -EINVAL;
        if (chip->lines[handle->lineoffsets[index]].requested) return -EBUSY;
    }
    line_request *request = calloc(1, sizeof *request);
    if (request == NULL) return -ENOMEM;
    request->chip = chip->number;
    request->count = handle->lines;
    memcpy(request->offsets, handle->lineoffsets, sizeof request->offsets);
    int fd = open_request(request);
    if (fd < 0) {
        free(request);
        return fd;
    }
    for (uint32_t index = 0; index < handle->lines; index++) {
        uint32_t offset = handle->lineoffsets[index];
        claim(chip, offset, handle->flags, handle->consumer_label);
        if (chip->lines[offset].output) {
            chip->lines[offset].level = (handle->default_values[index] != 0) != chip->lines[offset].active_low;
        }
    }
    handle->fd = fd;
    return 0;
}

static int line_events(gpio_chip *chip, struct gpioevent_request *event) {
    if (event->lineoffset >= (uint32_t)chip->line_count) return -EINVAL;
    if ((event->handleflags & (GPIOHANDLE_REQUEST_OUTPUT | GPIOHANDLE_REQUEST_OPEN_DRAIN | GPIOHANDLE_REQUEST_OPEN_SOURCE))
        || bias_of(event->handleflags) < 0) {
        return -EINVAL;
    }
    if (chip->lines[event->lineoffset].requested) return -EBUSY;
    line_request *request = calloc(1, sizeof *request);
    if (request == NULL) return -ENOMEM;
    request->chip = chip->number;
    request->count = 1;
    request->offsets[0] = event->lineoffset;
    request->events = true;
    request->event_flags = event->eventflags;
    int fd = open_request(request);
    if (fd < 0) {
        free(request);
        return fd;
    }
    claim(chip, event->lineoffset, event->handleflags | GPIOHANDLE_REQUEST_INPUT, event->consumer_label);
    event->fd = fd;
    return 0;
}

static void complete(UMockdevIoctlClient *client, int result) {
    if (result < 0) {
        umockdev_ioctl_client_complete(client, -1, -result);
    } else {
        umockdev_ioctl_client_complete(client, result, 0);
    }
}

static UMockdevIoctlData *resolve_argument(UMockdevIoctlClient *client, size_t size) {
    GError *failure = NULL;
    UMockdevIoctlData *data = umockdev_ioctl_data_resolve(umockdev_ioctl_client_get_arg(client), 0, size, &failure);
    g_clear_error(&failure);
    return data;
}

gboolean coaty_emu_gpio_handle_chip_ioctl(UMockdevIoctlClient *client, int number) {
    unsigned long request = umockdev_ioctl_client_get_request(client);
    size_t size = request == GPIO_GET_CHIPINFO_IOCTL ? sizeof(struct gpiochip_info)
                : request == GPIO_GET_LINEINFO_IOCTL ? sizeof(struct gpioline_info)
                : request == GPIO_GET_LINEHANDLE_IOCTL ? sizeof(struct gpiohandle_request)
                : request == GPIO_GET_LINEEVENT_IOCTL ? sizeof(struct gpioevent_request)
                : 0;
    if (size == 0) {
        complete(client, -ENOTTY);
        return TRUE;
    }
    UMockdevIoctlData *data = resolve_argument(client, size);
    if (data == NULL) {
        complete(client, -EFAULT);
        return TRUE;
    }
    pthread_mutex_lock(&coaty_emu_lock);
    gpio_chip *chip = find_chip(number);
    int result = 0;
    if (chip == NULL) {
        result = -ENODEV;
    } else if (request == GPIO_GET_CHIPINFO_IOCTL) {
        struct gpiochip_info *info = (struct gpiochip_info *)data->data;
        snprintf(info->name, sizeof info->name, "gpiochip%d", chip->number);
        snprintf(info->label, sizeof info->label, "%s", chip->label);
        info->lines = (uint32_t)chip->line_count;
    } else if (request == GPIO_GET_LINEINFO_IOCTL) {
        struct gpioline_info *info = (struct gpioline_info *)data->data;
        if (info->line_offset >= (uint32_t)chip->line_count) result = -EINVAL;
        else fill_line_info(chip, info);
    } else if (request == GPIO_GET_LINEHANDLE_IOCTL) {
        result = line_handle(chip, (struct gpiohandle_request *)data->data);
    } else {
        result = line_events(chip, (struct gpioevent_request *)data->data);
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    g_object_unref(data);
    complete(client, result);
    return TRUE;
}

static int request_failure(const line_request *request, const gpio_chip *chip) {
    for (uint32_t index = 0; index < request->count; index++) {
        int failure = chip->lines[request->offsets[index]].failure;
        if (failure != 0) return failure;
    }
    return 0;
}

gboolean coaty_emu_gpio_handle_request_ioctl(UMockdevIoctlClient *client) {
    unsigned long request_code = umockdev_ioctl_client_get_request(client);
    if (request_code != GPIOHANDLE_GET_LINE_VALUES_IOCTL && request_code != GPIOHANDLE_SET_LINE_VALUES_IOCTL) {
        complete(client, -ENOTTY);
        return TRUE;
    }
    UMockdevIoctlData *data = resolve_argument(client, sizeof(struct gpiohandle_data));
    if (data == NULL) {
        complete(client, -EFAULT);
        return TRUE;
    }
    struct gpiohandle_data *values = (struct gpiohandle_data *)data->data;
    pthread_mutex_lock(&coaty_emu_lock);
    line_request *request = find_request(client);
    gpio_chip *chip = request != NULL ? find_chip(request->chip) : NULL;
    int result = 0;
    if (chip == NULL) {
        result = -ENODEV;
    } else if (request_failure(request, chip) != 0) {
        result = -request_failure(request, chip);
    } else if (request_code == GPIOHANDLE_GET_LINE_VALUES_IOCTL) {
        for (uint32_t index = 0; index < request->count; index++) {
            const line_state *state = &chip->lines[request->offsets[index]];
            values->values[index] = state->level != state->active_low;
        }
    } else if (request->events || !chip->lines[request->offsets[0]].output) {
        result = -EPERM;
    } else {
        for (uint32_t index = 0; index < request->count; index++) {
            line_state *state = &chip->lines[request->offsets[index]];
            state->level = (values->values[index] != 0) != state->active_low;
        }
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    g_object_unref(data);
    complete(client, result);
    return TRUE;
}

gboolean coaty_emu_gpio_handle_request_read(UMockdevIoctlClient *client) {
    UMockdevIoctlData *buffer = umockdev_ioctl_client_get_arg(client);
    pthread_mutex_lock(&coaty_emu_lock);
    line_request *request = find_request(client);
    gpio_chip *chip = request != NULL ? find_chip(request->chip) : NULL;
    long result;
    if (chip == NULL || !request->events) {
        result = -EINVAL;
    } else if (request_failure(request, chip) != 0) {
        result = -request_failure(request, chip);
    } else {
        size_t whole_events = (size_t)buffer->data_len / sizeof(struct gpioevent_data) * sizeof(struct gpioevent_data);
        ssize_t count = whole_events == 0 ? -1 : read(request->event_pipe[0], buffer->data, whole_events);
        result = whole_events == 0 ? -EINVAL : count < 0 ? -errno : count;
    }
    pthread_mutex_unlock(&coaty_emu_lock);
    if (result < 0) {
        umockdev_ioctl_client_complete(client, -1, (int)-result);
    } else {
        umockdev_ioctl_client_complete(client, result, 0);
    }
    return TRUE;
}

void coaty_emu_gpio_request_connected(UMockdevIoctlClient *client) {
    pthread_mutex_lock(&coaty_emu_lock);
    // Connections are accepted in the order the handler opened them; the oldest waiting request is this one.
    line_request *oldest = NULL;
    for (line_request *request = requests; request != NULL; request = request->next) {
        if (request->client == NULL) oldest = request;
    }
    if (oldest != NULL) oldest->client = client;
    pthread_mutex_unlock(&coaty_emu_lock);
}

void coaty_emu_gpio_request_vanished(UMockdevIoctlClient *client) {
    pthread_mutex_lock(&coaty_emu_lock);
    for (line_request **link = &requests; *link != NULL; link = &(*link)->next) {
        line_request *request = *link;
        if (request->client != client) continue;
        gpio_chip *chip = find_chip(request->chip);
        for (uint32_t index = 0; chip != NULL && index < request->count; index++) {
            line_state *state = &chip->lines[request->offsets[index]];
            state->requested = false;
            state->output = false;
            state->consumer[0] = '\0';
        }
        if (request->events) {
            close(request->event_pipe[0]);
            close(request->event_pipe[1]);
        }
        *link = request->next;
        free(request);
        break;
    }
    pthread_mutex_unlock(&coaty_emu_lock);
}

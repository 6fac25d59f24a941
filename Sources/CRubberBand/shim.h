// librubberband, opened at the first stretcher (dlopen), not at start: it
// brings libstdc++, whose start-up costs a leader about 2 MiB resident, and
// most leaders never change a group's speed or pitch. Owned by TuttiTimeStretch.
#ifndef TUTTI_CRUBBERBAND_H
#define TUTTI_CRUBBERBAND_H
#include <rubberband/rubberband-c.h>
#include <dlfcn.h>
#include <stdlib.h>

/// The librubberband functions Tutti calls, looked up by `tutti_rubberband_open`.
typedef struct tutti_rubberband {
    RubberBandState (* _Nonnull new_)(unsigned int rate, unsigned int channels, RubberBandOptions options, double timeRatio, double pitchScale);
    void (* _Nonnull delete_)(RubberBandState state);
    void (* _Nonnull set_max_process_size)(RubberBandState state, unsigned int samples);
    unsigned int (* _Nonnull get_start_delay)(const RubberBandState state);
    unsigned int (* _Nonnull get_preferred_start_pad)(const RubberBandState state);
    void (* _Nonnull process)(RubberBandState state, const float *const *input, unsigned int samples, int final);
    int (* _Nonnull available)(const RubberBandState state);
    unsigned int (* _Nonnull retrieve)(const RubberBandState state, float *const *output, unsigned int samples);
} tutti_rubberband;

/// Loads librubberband 2: its functions (kept for the process's life), or NULL with `*why` set.
static inline const tutti_rubberband *_Nullable tutti_rubberband_open(const char *_Nullable *_Nonnull why) {
    void *lib = dlopen("librubberband.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) { *why = dlerror(); return NULL; }
    tutti_rubberband *api = (tutti_rubberband *)calloc(1, sizeof *api);
    if (api == NULL) { *why = "out of memory"; return NULL; }
#define TUTTI_RUBBERBAND_FIND(field, name) \
    if ((*(void **)&api->field = dlsym(lib, "rubberband_" name)) == NULL) { *why = dlerror(); free(api); return NULL; }
    TUTTI_RUBBERBAND_FIND(new_, "new") TUTTI_RUBBERBAND_FIND(delete_, "delete")
    TUTTI_RUBBERBAND_FIND(set_max_process_size, "set_max_process_size")
    TUTTI_RUBBERBAND_FIND(get_start_delay, "get_start_delay")
    TUTTI_RUBBERBAND_FIND(get_preferred_start_pad, "get_preferred_start_pad")
    TUTTI_RUBBERBAND_FIND(process, "process") TUTTI_RUBBERBAND_FIND(available, "available")
    TUTTI_RUBBERBAND_FIND(retrieve, "retrieve")
#undef TUTTI_RUBBERBAND_FIND
    return api;
}
#endif

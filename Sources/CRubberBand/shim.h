// librubberband, opened at the first stretcher (dlopen, TuttiSystem's
// FunctionTable), not at start: it brings libstdc++'s start-up, about 2 MiB
// resident, and most leaders never change a group's speed or pitch.
// Owned by TuttiTimeStretch.
#ifndef TUTTI_CRUBBERBAND_H
#define TUTTI_CRUBBERBAND_H
#include <rubberband/rubberband-c.h>

/// The librubberband functions Tutti calls, in the order TimeStretcher.swift names them.
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
#endif

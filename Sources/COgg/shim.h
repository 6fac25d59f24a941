// libogg, opened at first use (dlopen, TuttiSystem's FunctionTable), not
// linked: only the leader's previews write Ogg (Opus in Ogg for the web
// app's GET /preview/ID), so no binary maps it before the first preview
// (`binariesLinkOnlyWhatTheyUse`). Its functions are a table; owned by
// TuttiDecode (OggStream.swift), the only importer.
#ifndef TUTTI_COGG_H
#define TUTTI_COGG_H
#include <ogg/ogg.h>

/// The libogg functions Tutti calls, in the order OggStream.swift names them.
typedef struct tutti_ogg {
    int (* _Nonnull stream_init)(ogg_stream_state *_Nonnull stream, int serial);
    int (* _Nonnull stream_clear)(ogg_stream_state *_Nonnull stream);
    int (* _Nonnull stream_packetin)(ogg_stream_state *_Nonnull stream, ogg_packet *_Nonnull packet);
    int (* _Nonnull stream_pageout)(ogg_stream_state *_Nonnull stream, ogg_page *_Nonnull page);
    int (* _Nonnull stream_flush)(ogg_stream_state *_Nonnull stream, ogg_page *_Nonnull page);
    int (* _Nonnull stream_check)(ogg_stream_state *_Nonnull stream);
} tutti_ogg;
#endif

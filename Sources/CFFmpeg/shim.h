// FFmpeg (libavformat, libavcodec, libswresample, libavutil, and libswscale
// for covers; Debian 12's 5.1), opened at the first file or stream that needs it (dlopen,
// TuttiSystem's FunctionTable), never linked: Debian's libavformat pulls in
// about 134 shared libraries, some 30 MiB, and a leader that plays only MP3
// and FLAC (libmpg123, libFLAC) must not pay for them. Headers only here;
// the functions are a table. Owned by TuttiDecode.
#ifndef TUTTI_CFFMPEG_H
#define TUTTI_CFFMPEG_H
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/mem.h>
#include <libavutil/pixfmt.h>
#include <errno.h>

typedef int (*tutti_avio_read)(void *opaque, uint8_t *buf, int size);
typedef int64_t (*tutti_avio_seek)(void *opaque, int64_t offset, int whence);

/// The FFmpeg functions Tutti calls, in the order FFmpeg.swift names them.
typedef struct tutti_ffmpeg {
    // libavutil
    void (* _Nonnull log_set_level)(int level);
    int (* _Nonnull strerror)(int errnum, char *buf, size_t size);
    void *(* _Nonnull malloc)(size_t size);
    void (* _Nonnull free)(void *p);
    AVDictionaryEntry *(* _Nonnull dict_get)(const AVDictionary *m, const char *key, const AVDictionaryEntry *prev, int flags);
    AVFrame *(* _Nonnull frame_alloc)(void);
    void (* _Nonnull frame_free)(AVFrame **frame);
    void (* _Nonnull frame_unref)(AVFrame *frame);
    void (* _Nonnull channel_layout_default)(AVChannelLayout *layout, int channels);
    void (* _Nonnull channel_layout_uninit)(AVChannelLayout *layout);
    // libavcodec
    const AVCodec *(* _Nonnull find_decoder)(enum AVCodecID id);
    AVCodecContext *(* _Nonnull codec_alloc_context)(const AVCodec *codec);
    int (* _Nonnull parameters_to_context)(AVCodecContext *codec, const AVCodecParameters *par);
    int (* _Nonnull codec_open)(AVCodecContext *ctx, const AVCodec *codec, AVDictionary **options);
    int (* _Nonnull send_packet)(AVCodecContext *ctx, const AVPacket *packet);
    int (* _Nonnull receive_frame)(AVCodecContext *ctx, AVFrame *frame);
    void (* _Nonnull flush_buffers)(AVCodecContext *ctx);
    void (* _Nonnull codec_free_context)(AVCodecContext **ctx);
    AVPacket *(* _Nonnull packet_alloc)(void);
    void (* _Nonnull packet_free)(AVPacket **packet);
    void (* _Nonnull packet_unref)(AVPacket *packet);
    // libavformat
    AVFormatContext *(* _Nonnull format_alloc_context)(void);
    int (* _Nonnull open_input)(AVFormatContext **ps, const char *url, const AVInputFormat *format, AVDictionary **options);
    int (* _Nonnull find_stream_info)(AVFormatContext *ctx, AVDictionary **options);
    void (* _Nonnull close_input)(AVFormatContext **ctx);
    int (* _Nonnull find_best_stream)(AVFormatContext *ctx, enum AVMediaType type, int wanted, int related, const AVCodec **decoder, int flags);
    int (* _Nonnull read_frame)(AVFormatContext *ctx, AVPacket *packet);
    int (* _Nonnull seek_file)(AVFormatContext *ctx, int stream, int64_t min, int64_t ts, int64_t max, int flags);
    AVIOContext *(* _Nonnull avio_alloc_context)(unsigned char *buffer, int size, int write, void *opaque,
                                                 tutti_avio_read read, void *write_packet, tutti_avio_seek seek);
    void (* _Nonnull avio_context_free)(AVIOContext **ctx);
    const AVInputFormat *(* _Nonnull find_input_format)(const char *name);
    // libswresample
    int (* _Nonnull swr_alloc_set_opts2)(struct SwrContext **ps, const AVChannelLayout *out_layout, enum AVSampleFormat out_format, int out_rate,
                                         const AVChannelLayout *in_layout, enum AVSampleFormat in_format, int in_rate, int log_offset, void *log_ctx);
    int (* _Nonnull swr_init)(struct SwrContext *s);
    int (* _Nonnull swr_convert)(struct SwrContext *s, uint8_t **out, int out_count, const uint8_t **in, int in_count);
    void (* _Nonnull swr_free)(struct SwrContext **s);
    // Covers (libavcodec, libavutil): decoding a picture, encoding one.
    const AVCodec *(* _Nonnull find_encoder)(enum AVCodecID id);
    int (* _Nonnull send_frame)(AVCodecContext *ctx, const AVFrame *frame);
    int (* _Nonnull receive_packet)(AVCodecContext *ctx, AVPacket *packet);
    int (* _Nonnull new_packet)(AVPacket *packet, int size);
    int (* _Nonnull frame_get_buffer)(AVFrame *frame, int align);
} tutti_ffmpeg;

/// libswscale's functions (libswscale.so.6, a library of its own: libavformat
/// does not depend on it), opened at the first cover that is scaled.
typedef struct tutti_swscale {
    struct SwsContext *(* _Nonnull getContext)(int srcW, int srcH, enum AVPixelFormat srcFormat, int dstW, int dstH,
                                                enum AVPixelFormat dstFormat, int flags, SwsFilter *srcFilter,
                                                SwsFilter *dstFilter, const double *param);
    int (* _Nonnull scale_frame)(struct SwsContext *c, AVFrame *dst, const AVFrame *src);
    void (* _Nonnull freeContext)(struct SwsContext *c);
} tutti_swscale;

// Macros Swift cannot import.
static inline int tutti_averror_eof(void) { return AVERROR_EOF; }
static inline int tutti_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int64_t tutti_av_nopts(void) { return AV_NOPTS_VALUE; }
static inline int tutti_avseek_size(void) { return AVSEEK_SIZE; }
static inline int tutti_ff_qp2lambda(void) { return FF_QP2LAMBDA; }
#endif

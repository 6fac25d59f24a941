// libFLAC, opened at first use (dlopen, TuttiSystem's FunctionTable), not
// linked: a speaker decodes FLAC only when a Sendspin server sends it, and a
// leader needs it only for a FLAC file or a FLAC Sendspin player, so neither
// maps it before then (`aSpeakerRunsWithoutFoundation`,
// `binariesLinkOnlyWhatTheyUse`). Its functions are a table; owned by
// TuttiAudio (FLACLibrary.swift). TuttiDecode imports this module for the
// callbacks' types and constants only, and calls nothing in it.
#ifndef TUTTI_CFLAC_H
#define TUTTI_CFLAC_H
#include <FLAC/stream_decoder.h>
#include <FLAC/stream_encoder.h>
#include <FLAC/metadata.h>

/// The libFLAC functions Tutti calls, in the order FLACLibrary.swift names them.
typedef struct tutti_flac {
    FLAC__StreamDecoder *_Nullable (* _Nonnull decoder_new)(void);
    void (* _Nonnull decoder_delete)(FLAC__StreamDecoder *_Nonnull decoder);
    FLAC__bool (* _Nonnull decoder_finish)(FLAC__StreamDecoder *_Nonnull decoder);
    FLAC__bool (* _Nonnull decoder_set_md5_checking)(FLAC__StreamDecoder *_Nonnull decoder, FLAC__bool value);
    FLAC__bool (* _Nonnull decoder_set_metadata_respond)(FLAC__StreamDecoder *_Nonnull decoder, FLAC__MetadataType type);
    FLAC__StreamDecoderInitStatus (* _Nonnull decoder_init_file)(FLAC__StreamDecoder *_Nonnull decoder, const char *_Nonnull filename,
        FLAC__StreamDecoderWriteCallback _Nullable write, FLAC__StreamDecoderMetadataCallback _Nullable metadata,
        FLAC__StreamDecoderErrorCallback _Nullable error, void *_Nullable client);
    FLAC__StreamDecoderInitStatus (* _Nonnull decoder_init_stream)(FLAC__StreamDecoder *_Nonnull decoder,
        FLAC__StreamDecoderReadCallback _Nullable read, FLAC__StreamDecoderSeekCallback _Nullable seek,
        FLAC__StreamDecoderTellCallback _Nullable tell, FLAC__StreamDecoderLengthCallback _Nullable length,
        FLAC__StreamDecoderEofCallback _Nullable eof, FLAC__StreamDecoderWriteCallback _Nullable write,
        FLAC__StreamDecoderMetadataCallback _Nullable metadata, FLAC__StreamDecoderErrorCallback _Nullable error, void *_Nullable client);
    FLAC__bool (* _Nonnull decoder_process_until_end_of_metadata)(FLAC__StreamDecoder *_Nonnull decoder);
    FLAC__bool (* _Nonnull decoder_process_single)(FLAC__StreamDecoder *_Nonnull decoder);
    FLAC__bool (* _Nonnull decoder_process_until_end_of_stream)(FLAC__StreamDecoder *_Nonnull decoder);
    FLAC__bool (* _Nonnull decoder_seek_absolute)(FLAC__StreamDecoder *_Nonnull decoder, FLAC__uint64 sample);
    FLAC__bool (* _Nonnull decoder_flush)(FLAC__StreamDecoder *_Nonnull decoder);
    FLAC__StreamDecoderState (* _Nonnull decoder_get_state)(const FLAC__StreamDecoder *_Nonnull decoder);

    FLAC__StreamEncoder *_Nullable (* _Nonnull encoder_new)(void);
    void (* _Nonnull encoder_delete)(FLAC__StreamEncoder *_Nonnull encoder);
    FLAC__bool (* _Nonnull encoder_finish)(FLAC__StreamEncoder *_Nonnull encoder);
    FLAC__bool (* _Nonnull encoder_set_channels)(FLAC__StreamEncoder *_Nonnull encoder, uint32_t value);
    FLAC__bool (* _Nonnull encoder_set_bits_per_sample)(FLAC__StreamEncoder *_Nonnull encoder, uint32_t value);
    FLAC__bool (* _Nonnull encoder_set_sample_rate)(FLAC__StreamEncoder *_Nonnull encoder, uint32_t value);
    FLAC__bool (* _Nonnull encoder_set_compression_level)(FLAC__StreamEncoder *_Nonnull encoder, uint32_t value);
    FLAC__bool (* _Nonnull encoder_set_blocksize)(FLAC__StreamEncoder *_Nonnull encoder, uint32_t value);
    FLAC__bool (* _Nonnull encoder_set_streamable_subset)(FLAC__StreamEncoder *_Nonnull encoder, FLAC__bool value);
    FLAC__StreamEncoderInitStatus (* _Nonnull encoder_init_stream)(FLAC__StreamEncoder *_Nonnull encoder,
        FLAC__StreamEncoderWriteCallback _Nullable write, FLAC__StreamEncoderSeekCallback _Nullable seek,
        FLAC__StreamEncoderTellCallback _Nullable tell, FLAC__StreamEncoderMetadataCallback _Nullable metadata, void *_Nullable client);
    FLAC__bool (* _Nonnull encoder_process_interleaved)(FLAC__StreamEncoder *_Nonnull encoder, const FLAC__int32 *_Nonnull buffer, uint32_t samples);
    FLAC__StreamEncoderState (* _Nonnull encoder_get_state)(const FLAC__StreamEncoder *_Nonnull encoder);
} tutti_flac;
#endif

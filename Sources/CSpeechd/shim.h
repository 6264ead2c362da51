#ifndef VOICEBOX_CSPEECHD_SHIM_H
#define VOICEBOX_CSPEECHD_SHIM_H
#include <speech-dispatcher/libspeechd.h>
#endif

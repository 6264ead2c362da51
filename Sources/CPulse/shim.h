#pragma once
#include <pulse/pulseaudio.h>
#include <pulse/ext-stream-restore.h>

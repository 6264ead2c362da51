#ifndef VOICEBOX_CDBUS_SHIM_H
#define VOICEBOX_CDBUS_SHIM_H
#include <dbus/dbus.h>
#include <sys/eventfd.h>

/* libdbus's type codes and a few flags are macros, which Swift does not import: give them names. */
static const int VB_TYPE_INVALID = DBUS_TYPE_INVALID;
static const int VB_TYPE_BYTE = DBUS_TYPE_BYTE;
static const int VB_TYPE_BOOLEAN = DBUS_TYPE_BOOLEAN;
static const int VB_TYPE_INT16 = DBUS_TYPE_INT16;
static const int VB_TYPE_UINT16 = DBUS_TYPE_UINT16;
static const int VB_TYPE_INT32 = DBUS_TYPE_INT32;
static const int VB_TYPE_UINT32 = DBUS_TYPE_UINT32;
static const int VB_TYPE_INT64 = DBUS_TYPE_INT64;
static const int VB_TYPE_UINT64 = DBUS_TYPE_UINT64;
static const int VB_TYPE_DOUBLE = DBUS_TYPE_DOUBLE;
static const int VB_TYPE_STRING = DBUS_TYPE_STRING;
static const int VB_TYPE_OBJECT_PATH = DBUS_TYPE_OBJECT_PATH;
static const int VB_TYPE_SIGNATURE = DBUS_TYPE_SIGNATURE;
static const int VB_TYPE_UNIX_FD = DBUS_TYPE_UNIX_FD;
static const int VB_TYPE_ARRAY = DBUS_TYPE_ARRAY;
static const int VB_TYPE_VARIANT = DBUS_TYPE_VARIANT;
static const int VB_TYPE_STRUCT = DBUS_TYPE_STRUCT;
static const int VB_TYPE_DICT_ENTRY = DBUS_TYPE_DICT_ENTRY;

static const int VB_MESSAGE_TYPE_METHOD_CALL = DBUS_MESSAGE_TYPE_METHOD_CALL;
static const int VB_MESSAGE_TYPE_METHOD_RETURN = DBUS_MESSAGE_TYPE_METHOD_RETURN;
static const int VB_MESSAGE_TYPE_ERROR = DBUS_MESSAGE_TYPE_ERROR;
static const int VB_MESSAGE_TYPE_SIGNAL = DBUS_MESSAGE_TYPE_SIGNAL;

static const unsigned int VB_NAME_FLAG_DO_NOT_QUEUE = DBUS_NAME_FLAG_DO_NOT_QUEUE;
static const unsigned int VB_NAME_FLAG_REPLACE_EXISTING = DBUS_NAME_FLAG_REPLACE_EXISTING;
static const int VB_REQUEST_NAME_REPLY_PRIMARY_OWNER = DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER;
static const int VB_REQUEST_NAME_REPLY_ALREADY_OWNER = DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER;

static const unsigned int VB_WATCH_READABLE = DBUS_WATCH_READABLE;
static const unsigned int VB_WATCH_WRITABLE = DBUS_WATCH_WRITABLE;
static const unsigned int VB_WATCH_ERROR = DBUS_WATCH_ERROR;
static const unsigned int VB_WATCH_HANGUP = DBUS_WATCH_HANGUP;

static const int VB_TIMEOUT_USE_DEFAULT = DBUS_TIMEOUT_USE_DEFAULT;
static const int VB_TIMEOUT_INFINITE = DBUS_TIMEOUT_INFINITE;

/* DBusError is a plain struct; libdbus's own initialiser keeps its private bits right. */
static inline DBusError vb_error_new(void) { DBusError e; dbus_error_init(&e); return e; }
/* The event loop's wake-up: an eventfd that poll(2) watches beside libdbus's own fds. */
static inline int vb_wakeup_fd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }
#endif

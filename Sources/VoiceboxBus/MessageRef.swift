import CDBus
// libdbus declares a DBusError too (its C struct, `CDBus.DBusError` where used): ours is the contract's.
import struct VoiceboxContract.DBusError
import VoiceboxContract

/// One reference to a libdbus message.
///
/// `@unchecked Sendable` is safe because the only messages that cross threads are received
/// ones, which libdbus locks (makes read-only) before handing them out, and libdbus counts
/// references atomically once `dbus_threads_init_default` has run (BusConnection does it first).
final class MessageRef: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes over a reference the caller owns.
    init(adopting pointer: OpaquePointer) { self.pointer = pointer }

    /// Adds a reference of its own.
    init(retaining pointer: OpaquePointer) {
        self.pointer = dbus_message_ref(pointer)
    }

    deinit { dbus_message_unref(pointer) }

    var type: Int32 { dbus_message_get_type(pointer) }
    var sender: String? { dbus_message_get_sender(pointer).map { String(cString: $0) } }
    var path: String? { dbus_message_get_path(pointer).map { String(cString: $0) } }
    var interface: String? { dbus_message_get_interface(pointer).map { String(cString: $0) } }
    var member: String? { dbus_message_get_member(pointer).map { String(cString: $0) } }
    var signature: String { dbus_message_get_signature(pointer).map { String(cString: $0) } ?? "" }
    var errorName: String? { dbus_message_get_error_name(pointer).map { String(cString: $0) } }
    var expectsReply: Bool { dbus_message_get_no_reply(pointer) == 0 }

    /// An error reply turned into a DBusError (its message is the first string argument).
    func asError() -> DBusError? {
        guard type == VB_MESSAGE_TYPE_ERROR else { return nil }
        let text = (try? Marshalling.read(pointer))?.first?.string ?? ""
        return DBusError(name: errorName ?? "org.freedesktop.DBus.Error.Failed", message: text)
    }
}

/// Checks names before libdbus sees them: libdbus aborts on invalid ones.
enum Names {
    static func check(path: String) throws(DBusError) {
        guard Marshalling.isValidObjectPath(path) else { throw .invalidArgs("invalid object path \"\(path)\"") }
    }

    static func check(interface: String) throws(DBusError) {
        guard !interface.utf8.contains(0), dbus_validate_interface(interface, nil) != 0 else {
            throw .invalidArgs("invalid interface name \"\(interface)\"")
        }
    }

    static func check(member: String) throws(DBusError) {
        guard !member.utf8.contains(0), dbus_validate_member(member, nil) != 0 else {
            throw .invalidArgs("invalid member name \"\(member)\"")
        }
    }

    static func check(busName: String) throws(DBusError) {
        guard !busName.utf8.contains(0), dbus_validate_bus_name(busName, nil) != 0 else {
            throw .invalidArgs("invalid bus name \"\(busName)\"")
        }
    }

    static func check(errorName: String) throws(DBusError) {
        guard !errorName.utf8.contains(0), dbus_validate_error_name(errorName, nil) != 0 else {
            throw .invalidArgs("invalid error name \"\(errorName)\"")
        }
    }
}

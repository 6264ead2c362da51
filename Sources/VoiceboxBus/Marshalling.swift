import CDBus
// libdbus declares a DBusError too (its C struct, `CDBus.DBusError` where used): ours is the contract's.
import struct VoiceboxContract.DBusError
import Glibc
import VoiceboxContract

/// Writing and reading message bodies through libdbus's message iterators (its variadic
/// `dbus_message_append_args` is out of Swift's reach).
///
/// libdbus aborts the process on arguments it considers invalid, so every value is checked
/// here first and refused with an error: a bad value from a caller must never crash the service.
enum Marshalling {
    /// libdbus rejects messages nested deeper than this (arrays, structs, variants, dict entries).
    static let maximumDepth = 64

    /// dbus-daemon drops a connection that sends more descriptors in one message than this
    /// (measured with dbus 1.14: 16 pass, 17 disconnect): refused here instead.
    static let maximumDescriptors = 16

    static func validate(_ values: [DBusValue]) throws(DBusError) {
        for value in values { try validate(value, depth: 0, checkSignature: true) }
        let descriptors = values.reduce(0) { $0 + descriptorCount($1) }
        guard descriptors <= maximumDescriptors else {
            throw .invalidArgs("\(descriptors) file descriptors in one message; the bus takes at most \(maximumDescriptors)")
        }
    }

    private static func descriptorCount(_ value: DBusValue) -> Int {
        switch value {
        case .unixFD: 1
        case .array(_, let items): items.reduce(0) { $0 + descriptorCount($1) }
        case .structure(let fields): fields.reduce(0) { $0 + descriptorCount($1) }
        case .dictionary(_, _, let entries): entries.reduce(0) { $0 + descriptorCount($1.key) + descriptorCount($1.value) }
        case .variant(let inner): descriptorCount(inner)
        default: 0
        }
    }

    private static func validate(_ value: DBusValue, depth: Int, checkSignature: Bool) throws(DBusError) {
        guard depth <= maximumDepth else { throw .invalidArgs("value nested deeper than \(maximumDepth) levels") }
        if checkSignature { _ = try DBusType.parse(value.type.signature) }
        switch value {
        case .string(let s):
            guard !s.utf8.contains(0) else { throw .invalidArgs("string contains a NUL character") }
        case .objectPath(let path):
            guard isValidObjectPath(path) else { throw .invalidArgs("invalid object path \"\(path)\"") }
        case .signature(let s):
            _ = try DBusType.parseList(s)
        case .unixFD(let fd):
            guard fd >= 0 else { throw .invalidArgs("invalid file descriptor \(fd)") }
        case .array(let elementType, let items):
            for item in items {
                guard item.type == elementType else {
                    throw .invalidArgs("array of \(elementType) holds a \(item.type)")
                }
                try validate(item, depth: depth + 1, checkSignature: false)
            }
        case .dictionary(let keyType, let valueType, let entries):
            guard keyType.isBasic else { throw .invalidArgs("dictionary key type \(keyType) is not basic") }
            for entry in entries {
                guard entry.key.type == keyType, entry.value.type == valueType else {
                    throw .invalidArgs("dictionary of {\(keyType)\(valueType)} holds {\(entry.key.type)\(entry.value.type)}")
                }
                try validate(entry.key, depth: depth + 2, checkSignature: false)
                try validate(entry.value, depth: depth + 2, checkSignature: false)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .invalidArgs("empty struct") }
            for field in fields { try validate(field, depth: depth + 1, checkSignature: false) }
        case .variant(let inner):
            // A variant starts a new signature, so its own limits apply afresh.
            try validate(inner, depth: depth + 1, checkSignature: true)
        default:
            break
        }
    }

    static func isValidObjectPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousWasSlash = false
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
                continue
            }
            previousWasSlash = false
            let ok = (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "_")
            if !ok { return false }
        }
        return true
    }

    // MARK: Writing

    /// Appends `values` to a message body. Validates first; nothing is appended on error.
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        try validate(values)
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values {
            guard append(value, to: &iter) else { throw .noMemory() }
        }
    }

    private static func appendBasic<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ type: Int32, _ value: T) -> Bool {
        var copy = value
        return dbus_message_iter_append_basic(&iter, type, &copy) != 0
    }

    private static func appendString(_ iter: inout DBusMessageIter, _ type: Int32, _ string: String) -> Bool {
        string.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            return dbus_message_iter_append_basic(&iter, type, &pointer) != 0
        }
    }

    private static func withContainer(_ iter: inout DBusMessageIter, _ type: Int32, _ signature: String?,
                                      _ body: (inout DBusMessageIter) -> Bool) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) != 0 }
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub) != 0
        }
        guard opened else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let v): return appendBasic(&iter, VB_TYPE_BYTE, v)
        case .boolean(let v): return appendBasic(&iter, VB_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0))
        case .int16(let v): return appendBasic(&iter, VB_TYPE_INT16, v)
        case .uint16(let v): return appendBasic(&iter, VB_TYPE_UINT16, v)
        case .int32(let v): return appendBasic(&iter, VB_TYPE_INT32, v)
        case .uint32(let v): return appendBasic(&iter, VB_TYPE_UINT32, v)
        case .int64(let v): return appendBasic(&iter, VB_TYPE_INT64, v)
        case .uint64(let v): return appendBasic(&iter, VB_TYPE_UINT64, v)
        case .double(let v): return appendBasic(&iter, VB_TYPE_DOUBLE, v)
        case .unixFD(let fd): return appendBasic(&iter, VB_TYPE_UNIX_FD, fd)
        case .string(let s): return appendString(&iter, VB_TYPE_STRING, s)
        case .objectPath(let s): return appendString(&iter, VB_TYPE_OBJECT_PATH, s)
        case .signature(let s): return appendString(&iter, VB_TYPE_SIGNATURE, s)
        case .array(let elementType, let items):
            return withContainer(&iter, VB_TYPE_ARRAY, elementType.signature) { sub in
                items.allSatisfy { append($0, to: &sub) }
            }
        case .dictionary(let keyType, let valueType, let entries):
            return withContainer(&iter, VB_TYPE_ARRAY, "{" + keyType.signature + valueType.signature + "}") { sub in
                entries.allSatisfy { entry in
                    withContainer(&sub, VB_TYPE_DICT_ENTRY, nil) { pair in
                        append(entry.key, to: &pair) && append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return withContainer(&iter, VB_TYPE_STRUCT, nil) { sub in
                fields.allSatisfy { append($0, to: &sub) }
            }
        case .variant(let inner):
            return withContainer(&iter, VB_TYPE_VARIANT, inner.type.signature) { sub in
                append(inner, to: &sub)
            }
        }
    }

    // MARK: Reading

    /// Reads a whole message body. libdbus has validated incoming messages already.
    /// libdbus hands out each unix descriptor as a new duplicate: they are appended to
    /// `descriptors`, which the caller must close (also when this throws).
    static func read(_ message: OpaquePointer, descriptors: inout [Int32]) throws(DBusError) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        return try readAll(&iter, &descriptors)
    }

    /// Reads a body whose descriptors nobody keeps (replies, signals, property calls): any that
    /// came are closed at once, and the values name closed numbers.
    static func read(_ message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var descriptors: [Int32] = []
        defer { for descriptor in descriptors { close(descriptor) } }
        return try read(message, descriptors: &descriptors)
    }

    private static func readAll(_ iter: inout DBusMessageIter, _ descriptors: inout [Int32]) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != VB_TYPE_INVALID {
            values.append(try readOne(&iter, &descriptors))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    private static func basic<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ zero: T) -> T {
        var value = zero
        dbus_message_iter_get_basic(&iter, &value)
        return value
    }

    private static func string(_ iter: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    private static func signature(of iter: inout DBusMessageIter) throws(DBusError) -> DBusType {
        guard let raw = dbus_message_iter_get_signature(&iter) else { throw .noMemory() }
        defer { dbus_free(raw) }
        return try DBusType.parse(String(cString: raw))
    }

    private static func readOne(_ iter: inout DBusMessageIter, _ descriptors: inout [Int32]) throws(DBusError) -> DBusValue {
        let type = dbus_message_iter_get_arg_type(&iter)
        switch type {
        case VB_TYPE_BYTE: return .byte(basic(&iter, UInt8(0)))
        case VB_TYPE_BOOLEAN: return .boolean(basic(&iter, dbus_bool_t(0)) != 0)
        case VB_TYPE_INT16: return .int16(basic(&iter, Int16(0)))
        case VB_TYPE_UINT16: return .uint16(basic(&iter, UInt16(0)))
        case VB_TYPE_INT32: return .int32(basic(&iter, Int32(0)))
        case VB_TYPE_UINT32: return .uint32(basic(&iter, UInt32(0)))
        case VB_TYPE_INT64: return .int64(basic(&iter, Int64(0)))
        case VB_TYPE_UINT64: return .uint64(basic(&iter, UInt64(0)))
        case VB_TYPE_DOUBLE: return .double(basic(&iter, Double(0)))
        case VB_TYPE_UNIX_FD:
            let descriptor = basic(&iter, Int32(-1))
            if descriptor >= 0 { descriptors.append(descriptor) }
            return .unixFD(descriptor)
        case VB_TYPE_STRING: return .string(string(&iter))
        case VB_TYPE_OBJECT_PATH: return .objectPath(string(&iter))
        case VB_TYPE_SIGNATURE: return .signature(string(&iter))
        case VB_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(try readOne(&sub, &descriptors))
        case VB_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .structure(try readAll(&sub, &descriptors))
        case VB_TYPE_ARRAY:
            let arrayType = try signature(of: &iter)
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            switch arrayType {
            case .dictionary(let keyType, let valueType):
                var entries: [DBusDictEntry] = []
                while dbus_message_iter_get_arg_type(&sub) == VB_TYPE_DICT_ENTRY {
                    var pair = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &pair)
                    let key = try readOne(&pair, &descriptors)
                    dbus_message_iter_next(&pair)
                    let value = try readOne(&pair, &descriptors)
                    entries.append(DBusDictEntry(key, value))
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(key: keyType, value: valueType, entries)
            case .array(let elementType):
                return .array(elementType, try readAll(&sub, &descriptors))
            default:
                throw .invalidSignature(arrayType.signature, "array iterator without array type")
            }
        default:
            throw .invalidArgs("unknown type code \(type)")
        }
    }
}

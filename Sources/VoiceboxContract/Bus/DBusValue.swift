/// A D-Bus value of any type. Containers carry their element types so that empty
/// arrays and dictionaries still have a signature.
public indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A file descriptor; marshalling duplicates it, the caller keeps its own.
    case unixFD(Int32)
    case array(DBusType, [DBusValue])
    case dictionary(key: DBusType, value: DBusType, [DBusDictEntry])
    case structure([DBusValue])
    case variant(DBusValue)

    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        case .variant: .variant
        }
    }
}

public struct DBusDictEntry: Sendable, Hashable {
    public var key: DBusValue
    public var value: DBusValue
    public init(_ key: DBusValue, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}

// Conveniences for the shapes the API uses most.
extension DBusValue {
    /// `a{sv}`: the options and details dictionaries of the API.
    public static func vardict(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(key: .string, value: .variant,
                    entries.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), .variant($0.value)) })
    }

    public static func stringArray(_ strings: [String]) -> DBusValue {
        .array(.string, strings.map { .string($0) })
    }

    public var string: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    public var bool: Bool? { if case .boolean(let b) = self { b } else { nil } }
    public var double: Double? { if case .double(let d) = self { d } else { nil } }
    public var uint64: UInt64? { if case .uint64(let v) = self { v } else { nil } }
    public var int64: Int64? { if case .int64(let v) = self { v } else { nil } }
    public var uint32: UInt32? { if case .uint32(let v) = self { v } else { nil } }

    /// The value inside a variant (one level), or the value itself.
    public var unwrapped: DBusValue { if case .variant(let inner) = self { inner } else { self } }

    public var arrayElements: [DBusValue]? { if case .array(_, let items) = self { items } else { nil } }

    /// An `a{sv}` as a Swift dictionary with the variants unwrapped; nil for any other shape.
    /// A repeated key keeps its last value, as most D-Bus bindings do.
    public var vardictEntries: [String: DBusValue]? {
        guard case .dictionary(.string, .variant, let entries) = self else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard case .string(let key) = entry.key else { return nil }
            result[key] = entry.value.unwrapped
        }
        return result
    }
}

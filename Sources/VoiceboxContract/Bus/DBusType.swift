/// A complete D-Bus type, as a signature spells it ("a{sv}", "(sdd)", "t", ...).
public indirect enum DBusType: Sendable, Hashable, CustomStringConvertible {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case variant
    case array(DBusType)
    case dictionary(key: DBusType, value: DBusType)
    case structure([DBusType])

    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a" + element.signature
        case .dictionary(let key, let value): "a{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    public var description: String { signature }

    /// Basic types are the only ones allowed as dictionary keys.
    public var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: false
        default: true
        }
    }

    /// Parses a signature holding any number of complete types ("" gives []).
    /// Enforces the spec's limits: 255 bytes, 32 nested arrays, 32 nested structs.
    public static func parseList(_ signature: String) throws(DBusError) -> [DBusType] {
        let bytes = Array(signature.utf8)
        guard bytes.count <= 255 else { throw .invalidSignature(signature, "longer than 255 bytes") }
        var parser = SignatureParser(bytes: bytes, text: signature)
        var types: [DBusType] = []
        while !parser.atEnd { types.append(try parser.parseOne(arrayDepth: 0, structDepth: 0)) }
        return types
    }

    /// Parses a signature holding exactly one complete type.
    public static func parse(_ signature: String) throws(DBusError) -> DBusType {
        let types = try parseList(signature)
        guard types.count == 1 else { throw .invalidSignature(signature, "not exactly one complete type") }
        return types[0]
    }
}

private struct SignatureParser {
    let bytes: [UInt8]
    let text: String
    var index = 0

    var atEnd: Bool { index >= bytes.count }

    mutating func parseOne(arrayDepth: Int, structDepth: Int) throws(DBusError) -> DBusType {
        guard !atEnd else { throw .invalidSignature(text, "ends inside a type") }
        let code = bytes[index]
        index += 1
        switch code {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            guard arrayDepth < 32 else { throw .invalidSignature(text, "more than 32 nested arrays") }
            if !atEnd, bytes[index] == UInt8(ascii: "{") {
                index += 1
                let key = try parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth)
                guard key.isBasic else { throw .invalidSignature(text, "dictionary key must be a basic type") }
                let value = try parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth)
                guard !atEnd, bytes[index] == UInt8(ascii: "}") else {
                    throw .invalidSignature(text, "dictionary entry must hold exactly a key and a value")
                }
                index += 1
                return .dictionary(key: key, value: value)
            }
            return .array(try parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth))
        case UInt8(ascii: "("):
            guard structDepth < 32 else { throw .invalidSignature(text, "more than 32 nested structs") }
            var fields: [DBusType] = []
            while !atEnd, bytes[index] != UInt8(ascii: ")") {
                fields.append(try parseOne(arrayDepth: arrayDepth, structDepth: structDepth + 1))
            }
            guard !atEnd else { throw .invalidSignature(text, "unclosed struct") }
            guard !fields.isEmpty else { throw .invalidSignature(text, "empty struct") }
            index += 1
            return .structure(fields)
        default:
            throw .invalidSignature(text, "unexpected '\(Character(Unicode.Scalar(code)))'")
        }
    }
}

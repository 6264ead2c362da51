/// A JSON document as a tree, with its text: what `JSON` encodes Codable values through.
/// Numbers keep their text, so a UInt64 comes back exactly (a Double would round it).
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public struct SyntaxError: Error, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        public var description: String { "JSON: \(reason) at byte \(offset)" }
    }

    /// Nesting deeper than this is refused (a corrupt file must not exhaust the stack).
    public static let maximumDepth = 64

    // MARK: Writing

    /// Compact text; object keys sorted, so the same value always gives the same bytes.
    public var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): Self.writeString(text, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                Self.writeString(key, to: &out)
                out += ":"
                members[key]!.write(to: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    // MARK: Reading

    /// Parses a whole document (surrounding whitespace allowed).
    public init(parsing bytes: [UInt8]) throws(SyntaxError) {
        var parser = Parser(bytes: bytes)
        self = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.offset == bytes.count else { throw parser.error("text after the document") }
    }

    private struct Parser {
        let bytes: [UInt8]
        var offset = 0

        func error(_ reason: String) -> SyntaxError { SyntaxError(offset: offset, reason: reason) }

        mutating func skipWhitespace() {
            while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
        }

        mutating func expect(_ word: String) throws(SyntaxError) {
            for byte in word.utf8 {
                guard offset < bytes.count, bytes[offset] == byte else { throw error("expected \(word)") }
                offset += 1
            }
        }

        mutating func value(depth: Int) throws(SyntaxError) -> JSONValue {
            guard depth < JSONValue.maximumDepth else { throw error("nested too deeply") }
            skipWhitespace()
            guard offset < bytes.count else { throw error("unexpected end") }
            switch bytes[offset] {
            case UInt8(ascii: "n"): try expect("null"); return .null
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                offset += 1
                var items: [JSONValue] = []
                skipWhitespace()
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") { offset += 1; return .array(items) }
                while true {
                    items.append(try value(depth: depth + 1))
                    skipWhitespace()
                    guard offset < bytes.count else { throw error("unexpected end in an array") }
                    offset += 1
                    if bytes[offset - 1] == UInt8(ascii: "]") { return .array(items) }
                    guard bytes[offset - 1] == UInt8(ascii: ",") else { throw error("expected , or ]") }
                }
            case UInt8(ascii: "{"):
                offset += 1
                var members: [String: JSONValue] = [:]
                skipWhitespace()
                if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") { offset += 1; return .object(members) }
                while true {
                    skipWhitespace()
                    guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw error("expected a key") }
                    let key = try string()
                    skipWhitespace()
                    try expect(":")
                    members[key] = try value(depth: depth + 1)
                    skipWhitespace()
                    guard offset < bytes.count else { throw error("unexpected end in an object") }
                    offset += 1
                    if bytes[offset - 1] == UInt8(ascii: "}") { return .object(members) }
                    guard bytes[offset - 1] == UInt8(ascii: ",") else { throw error("expected , or }") }
                }
            default:
                return .number(try number())
            }
        }

        mutating func number() throws(SyntaxError) -> String {
            let start = offset
            while offset < bytes.count, "+-0123456789.eE".utf8.contains(bytes[offset]) { offset += 1 }
            let text = String(decoding: bytes[start..<offset], as: UTF8.self)
            guard !text.isEmpty, Double(text) != nil else { throw SyntaxError(offset: start, reason: "not a value") }
            return text
        }

        mutating func string() throws(SyntaxError) -> String {
            offset += 1  // the opening quote
            var run = offset  // start of the bytes copied as they are
            var text = ""
            func flush(_ end: Int) { text += String(decoding: bytes[run..<end], as: UTF8.self) }
            while offset < bytes.count {
                let byte = bytes[offset]
                if byte == UInt8(ascii: "\"") {
                    flush(offset)
                    offset += 1
                    return text
                }
                guard byte >= 0x20 else { throw error("a control character in a string") }
                guard byte == UInt8(ascii: "\\") else { offset += 1; continue }
                flush(offset)
                offset += 1
                guard offset < bytes.count else { break }
                let escaped = bytes[offset]
                offset += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.unicodeScalars.append(Unicode.Scalar(escaped))
                case UInt8(ascii: "b"): text += "\u{8}"
                case UInt8(ascii: "f"): text += "\u{C}"
                case UInt8(ascii: "n"): text += "\n"
                case UInt8(ascii: "r"): text += "\r"
                case UInt8(ascii: "t"): text += "\t"
                case UInt8(ascii: "u"):
                    var unit = try hex4()
                    if (0xD800..<0xDC00).contains(unit), offset + 1 < bytes.count,
                       bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") {
                        offset += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("a lone surrogate") }
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(unit) else { throw error("a lone surrogate") }
                    text.unicodeScalars.append(scalar)
                default:
                    throw error("an unknown escape")
                }
                run = offset
            }
            throw error("an unterminated string")
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard offset + 4 <= bytes.count,
                  let value = UInt32(String(decoding: bytes[offset..<offset + 4], as: UTF8.self), radix: 16) else {
                throw error("a bad \\u escape")
            }
            offset += 4
            return value
        }
    }
}

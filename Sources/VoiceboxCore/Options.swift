/// An option's value as the caller sent it, with the bus's types reduced to what options use.
public enum OptionValue: Sendable, Equatable {
    case string(String)
    case double(Double)
    case bool(Bool)
    case strings([String])
    case uint32(UInt32)
    /// A unix descriptor (`h`), open for the length of the call.
    case descriptor(Int32)
    /// Any other D-Bus type, by its signature: always refused, but named in the error.
    case other(signature: String)

    var typeName: String {
        switch self {
        case .string: "s"
        case .double: "d"
        case .bool: "b"
        case .strings: "as"
        case .uint32: "u"
        case .descriptor: "h"
        case .other(let signature): signature
        }
    }
}

/// Reads an `a{sv}` of options strictly: unknown keys and wrong types are errors, since a
/// silently ignored misspelt option is a bug the caller never finds.
struct OptionReader {
    private var remaining: [String: OptionValue]

    init(_ options: [String: OptionValue]) { remaining = options }

    private func typeError(_ key: String, _ expected: String, _ value: OptionValue) -> VoiceboxError {
        .invalidArgument("option '\(key)' must be of type \(expected), not \(value.typeName)")
    }

    mutating func string(_ key: String) throws(VoiceboxError) -> String? {
        guard let value = remaining.removeValue(forKey: key) else { return nil }
        guard case .string(let s) = value else { throw typeError(key, "s", value) }
        return s
    }

    mutating func bool(_ key: String) throws(VoiceboxError) -> Bool? {
        guard let value = remaining.removeValue(forKey: key) else { return nil }
        guard case .bool(let b) = value else { throw typeError(key, "b", value) }
        return b
    }

    mutating func strings(_ key: String) throws(VoiceboxError) -> [String]? {
        guard let value = remaining.removeValue(forKey: key) else { return nil }
        guard case .strings(let s) = value else { throw typeError(key, "as", value) }
        return s
    }

    mutating func descriptor(_ key: String) throws(VoiceboxError) -> Int32? {
        guard let value = remaining.removeValue(forKey: key) else { return nil }
        guard case .descriptor(let fd) = value else { throw typeError(key, "h", value) }
        return fd
    }

    mutating func uint32(_ key: String, in range: ClosedRange<UInt32>) throws(VoiceboxError) -> UInt32? {
        guard let value = remaining.removeValue(forKey: key) else { return nil }
        guard case .uint32(let u) = value else { throw typeError(key, "u", value) }
        guard range.contains(u) else {
            throw .invalidArgument("option '\(key)' must be between \(range.lowerBound) and \(range.upperBound), not \(u)")
        }
        return u
    }

    mutating func double(_ key: String, in range: ClosedRange<Double>) throws(VoiceboxError) -> Double? {
        guard let value = remaining.removeValue(forKey: key) else { return nil }
        guard case .double(let d) = value else { throw typeError(key, "d", value) }
        guard range.contains(d) else {
            throw .invalidArgument("option '\(key)' must be between \(range.lowerBound) and \(range.upperBound), not \(d)")
        }
        return d
    }

    /// The `others` option: pause, duck or mix.
    mutating func othersPolicy() throws(VoiceboxError) -> OthersPolicy? {
        guard let name = try string("others") else { return nil }
        guard let policy = OthersPolicy(rawValue: name) else {
            let known = OthersPolicy.allCases.map(\.rawValue).joined(separator: ", ")
            throw .invalidArgument("option 'others' must be one of \(known), not '\(name)'")
        }
        return policy
    }

    /// Call last: anything not read is a key we do not know.
    func finish() throws(VoiceboxError) {
        if let key = remaining.keys.sorted().first { throw .invalidArgument("unknown option '\(key)'") }
    }
}

/// The options of Speak, checked.
public struct SpeakOptions: Sendable, Equatable {
    public static let maximumTextBytes = 65_536

    public var voice: String?
    public var language: String?
    public var rate: Double = 1
    public var pitch: Double = 1
    public var volume: Double?
    public var ssml = false
    public var priority: SpeechPriority = .message
    public var wait = false
    /// What to do to other audio while speaking; nil: the service's default.
    public var others: OthersPolicy?

    public init() {}

    public init(_ options: [String: OptionValue]) throws(VoiceboxError) {
        var reader = OptionReader(options)
        voice = try reader.string("voice")
        language = try reader.string("language")
        rate = try reader.double("rate", in: 0.25...4) ?? 1
        pitch = try reader.double("pitch", in: 0.5...2) ?? 1
        volume = try reader.double("volume", in: 0...1)
        ssml = try reader.bool("ssml") ?? false
        if let name = try reader.string("priority") {
            guard let priority = SpeechPriority(rawValue: name) else {
                let known = SpeechPriority.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidArgument("option 'priority' must be one of \(known), not '\(name)'")
            }
            self.priority = priority
        }
        wait = try reader.bool("wait") ?? false
        others = try reader.othersPolicy()
        try reader.finish()
        if voice != nil && language != nil {
            throw .invalidArgument("options 'voice' and 'language' contradict each other: give one")
        }
        if let language, !LanguageTag.isWellFormed(language) {
            throw .invalidArgument("option 'language' is not a BCP-47 tag: '\(language)'")
        }
    }
}

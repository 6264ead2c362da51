import VoiceboxContract

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

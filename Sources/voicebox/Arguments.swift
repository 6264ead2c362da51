/// Bad usage: the message names the argument at fault. Exits 64.
struct UsageError: Error, Equatable, CustomStringConvertible {
    var description: String
    /// The subcommand whose usage to point at ("" for the command itself).
    var command: String = ""
}

/// One command-line argument: its text, and its bytes as the kernel gave them (a file name need
/// not be UTF-8; the text then has replacement characters, the bytes are exact).
struct Argument: Equatable {
    var text: String
    var bytes: [UInt8]

    init(_ text: String) {
        self.text = text
        bytes = Array(text.utf8)
    }

    init(bytes: [UInt8]) {
        self.bytes = bytes
        text = String(decoding: bytes, as: UTF8.self)
    }
}

/// Reads one subcommand's arguments in order: flags, their values, and the operands left over.
struct ArgumentReader {
    let command: String
    private var rest: ArraySlice<Argument>
    /// After `--`: everything is an operand.
    private var operandsOnly = false

    init(command: String, _ arguments: ArraySlice<String>) {
        self.init(command: command, arguments: arguments.map(Argument.init)[...])
    }

    init(command: String, arguments: ArraySlice<Argument>) {
        self.command = command
        rest = arguments
    }

    enum Item: Equatable {
        case flag(String)
        case operand(String)
    }

    /// The next flag or operand; nil at the end. A `--name=value` flag is split, its value read next.
    mutating func next() -> Item? {
        guard let argument = rest.popFirst() else { return nil }
        let text = argument.text
        if operandsOnly { return .operand(text) }
        if text == "--" {
            operandsOnly = true
            return next()
        }
        if text.hasPrefix("--"), let equals = argument.bytes.firstIndex(of: UInt8(ascii: "=")) {
            rest.insert(Argument(bytes: Array(argument.bytes[(equals + 1)...])), at: rest.startIndex)
            return .flag(String(decoding: argument.bytes[..<equals], as: UTF8.self))
        }
        if text.hasPrefix("-"), text.count > 1, Double(text) == nil { return .flag(text) }
        return .operand(text)
    }

    /// The value that follows `flag`.
    mutating func value(of flag: String) throws(UsageError) -> String {
        try argument(of: flag).text
    }

    /// The value that follows `flag`, with its bytes (a file name).
    mutating func argument(of flag: String) throws(UsageError) -> Argument {
        guard let value = rest.popFirst() else { throw error("\(flag) needs a value") }
        return value
    }

    mutating func number(of flag: String, in range: ClosedRange<Double>? = nil) throws(UsageError) -> Double {
        let text = try value(of: flag)
        guard let number = Double(text), number.isFinite else { throw error("\(flag) takes a number, not '\(text)'") }
        if let range, !range.contains(number) {
            throw error("\(flag) takes a number from \(Self.format(range.lowerBound)) to \(Self.format(range.upperBound)), not '\(text)'")
        }
        return number
    }

    func error(_ message: String) -> UsageError { UsageError(description: message, command: command) }

    func unknown(_ flag: String) -> UsageError { error("unknown option '\(flag)' for \(command)") }

    func unexpected(_ operand: String) -> UsageError { error("unexpected argument '\(operand)' for \(command)") }

    static func format(_ number: Double) -> String {
        number == number.rounded() ? String(Int(number)) : String(number)
    }
}

/// What subcommands without options of their own accept.
extension Invocation {
    static func onlyJSON(_ reader: inout ArgumentReader) throws(UsageError) -> Bool {
        var json = false
        while let item = reader.next() {
            switch item {
            case .flag("--json"): json = true
            case .flag(let flag): throw reader.unknown(flag)
            case .operand(let extra): throw reader.unexpected(extra)
            }
        }
        return json
    }

    static func noArguments(_ reader: inout ArgumentReader) throws(UsageError) {
        switch reader.next() {
        case nil: return
        case .flag(let flag): throw reader.unknown(flag)
        case .operand(let extra): throw reader.unexpected(extra)
        }
    }
}

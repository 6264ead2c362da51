/// Bad usage: the message names the argument at fault. Exits 64.
struct UsageError: Error, Equatable, CustomStringConvertible {
    var description: String
    /// The subcommand whose usage to point at ("" for the command itself).
    var command: String = ""
}

/// Reads one subcommand's arguments in order: flags, their values, and the operands left over.
struct ArgumentReader {
    let command: String
    private var rest: ArraySlice<String>
    /// After `--`: everything is an operand.
    private var operandsOnly = false

    init(command: String, _ arguments: ArraySlice<String>) {
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
        if operandsOnly { return .operand(argument) }
        if argument == "--" {
            operandsOnly = true
            return next()
        }
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
            rest.insert(String(argument[argument.index(after: equals)...]), at: rest.startIndex)
            return .flag(String(argument[..<equals]))
        }
        if argument.hasPrefix("-"), argument.count > 1, Double(argument) == nil { return .flag(argument) }
        return .operand(argument)
    }

    /// The value that follows `flag`.
    mutating func value(of flag: String) throws(UsageError) -> String {
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

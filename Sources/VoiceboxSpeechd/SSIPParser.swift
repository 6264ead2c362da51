/// One complete answer of speech-dispatcher to a command: `NNN-data` lines, then `NNN text`.
struct SSIPReply: Sendable, Equatable {
    var code: Int
    /// The `NNN-` lines, without their prefix.
    var lines: [String]
    /// The final `NNN text` line's text.
    var text: String

    /// SSIP: 2xx is success, 3xx/4xx/5xx are errors of the server, the client or the command.
    var isSuccess: Bool { (200..<300).contains(code) }
}

/// A notification (`SET SELF NOTIFICATION ALL on`): codes 700–705, lines msg id, client id[, mark].
struct SSIPEvent: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case mark(String), begin, end, cancel, pause, resume
    }

    var kind: Kind
    var messageID: Int
    var clientID: Int
}

enum SSIPMessage: Sendable, Equatable {
    case reply(SSIPReply)
    case event(SSIPEvent)
}

enum SSIPParseError: Error, Equatable {
    /// Not `NNN-…` / `NNN …`, or a code that changes within one reply, or an event without its ids.
    case malformed(String)
}

/// Turns the bytes of an SSIP stream, in chunks split anywhere, into replies and events in order.
/// Pure: no I/O. A line ends with `\n` (speech-dispatcher sends `\r\n`; the `\r` is dropped).
struct SSIPParser {
    private var buffer: [UInt8] = []
    /// The code and data lines of the reply or event being read.
    private var code: Int?
    private var lines: [String] = []

    /// Whether a reply or event has begun but not ended (a close now cuts it short).
    var isMidMessage: Bool { code != nil || !buffer.isEmpty }

    mutating func feed<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(SSIPParseError) -> [SSIPMessage] {
        buffer.append(contentsOf: bytes)
        var messages: [SSIPMessage] = []
        var start = 0
        defer { buffer.removeFirst(start) }
        while let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
            var end = newline
            if end > start, buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            let line = buffer[start..<end]
            start = newline + 1
            if let message = try take(line) { messages.append(message) }
        }
        return messages
    }

    private mutating func take(_ line: ArraySlice<UInt8>) throws(SSIPParseError) -> SSIPMessage? {
        let text = String(decoding: line, as: UTF8.self)
        let base = line.startIndex
        guard line.count >= 4,
              line[base..<base + 3].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              line[base + 3] == UInt8(ascii: "-") || line[base + 3] == UInt8(ascii: " ")
        else { throw .malformed(text) }
        let lineCode = line[base..<base + 3].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        if let code, code != lineCode { throw .malformed(text) }
        let payload = String(text.dropFirst(4))
        guard line[base + 3] == UInt8(ascii: " ") else {
            code = lineCode
            lines.append(payload)
            return nil
        }
        let data = lines
        code = nil
        lines = []
        guard (700..<800).contains(lineCode) else {
            return .reply(SSIPReply(code: lineCode, lines: data, text: payload))
        }
        return try Self.event(lineCode, data, text)
    }

    private static func event(_ code: Int, _ data: [String], _ text: String) throws(SSIPParseError) -> SSIPMessage? {
        guard data.count >= 2, let messageID = Int(data[0]), let clientID = Int(data[1]) else {
            throw .malformed(text)
        }
        let kind: SSIPEvent.Kind
        switch code {
        case 700:
            guard data.count >= 3 else { throw .malformed(text) }
            kind = .mark(data[2])
        case 701: kind = .begin
        case 702: kind = .end
        case 703: kind = .cancel
        case 704: kind = .pause
        case 705: kind = .resume
        default: return nil // a notification this client does not know: skipped whole
        }
        return .event(SSIPEvent(kind: kind, messageID: messageID, clientID: clientID))
    }
}

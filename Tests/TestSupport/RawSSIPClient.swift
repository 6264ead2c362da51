import Foundation
import Glibc

/// A speech-dispatcher client of the test's own, speaking SSIP on a blocking unix socket with
/// every read bounded: to do to a shared server what any other program could (freeze it), and to
/// ask it whether it still speaks.
public final class RawSSIPClient {
    private let fd: Int32
    private var buffer: [UInt8] = []
    /// Notifications (70x) seen so far, as their final lines' codes and message ids.
    public private(set) var events: [(code: Int, message: Int)] = []

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Connects to `address` (`unix_socket:PATH`) and names itself; notifications on.
    public init(address: String, name: String = "tests") throws {
        guard address.hasPrefix("unix_socket:") else { throw Failure(description: "not a unix socket address: \(address)") }
        let path = String(address.dropFirst("unix_socket:".count))
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(107).enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(description: "cannot connect to \(path): \(String(cString: strerror(errno)))")
        }
        _ = try command("SET self CLIENT_NAME root:\(name):raw")
        _ = try command("SET self NOTIFICATION all on")
    }

    deinit { close(fd) }

    /// Sends one command line and returns the reply's final line ("225 OK MESSAGE QUEUED") and data lines.
    @discardableResult
    public func command(_ line: String, timeout: Double = 3) throws -> (last: String, data: [String]) {
        try send(Array((line + "\r\n").utf8))
        return try reply(timeout: timeout)
    }

    /// SPEAK with `body` as the bytes after the 230, sent exactly as given (the caller escapes, or
    /// not); returns the message id of the 225.
    @discardableResult
    public func speakRaw(_ body: [UInt8], timeout: Double = 3) throws -> Int? {
        let go = try command("SPEAK", timeout: timeout)
        guard go.last.hasPrefix("230") else { throw Failure(description: "SPEAK refused: \(go.last)") }
        try send(body)
        let queued = try reply(timeout: timeout)
        return queued.last.hasPrefix("225") ? queued.data.first.flatMap { Int($0) } : nil
    }

    /// Text as SSIP wants it: CRLF, dots doubled at line starts, the end marker.
    public static func escaped(_ text: String) -> [UInt8] {
        let lines = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasPrefix(".") ? "." + $0 : String($0) }
        return Array((lines.joined(separator: "\r\n") + "\r\n.\r\n").utf8)
    }

    /// Waits for a notification `code` (701 begin, 702 end, 703 cancel) of message `id`.
    public func waitForEvent(_ code: Int, message id: Int, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !events.contains(where: { $0.code == code && $0.message == id }) {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, (try? readLine(timeout: left)).flatMap({ $0 }) != nil else {
                return events.contains { $0.code == code && $0.message == id }
            }
        }
        return true
    }

    private func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "write failed: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// The next reply, events before it kept in `events`.
    private func reply(timeout: Double) throws -> (last: String, data: [String]) {
        let deadline = Date().addingTimeInterval(timeout)
        var data: [String] = []
        while true {
            guard let line = try readLine(timeout: max(0, deadline.timeIntervalSinceNow)) else {
                throw Failure(description: "no reply within \(timeout) s")
            }
            if line.hasPrefix("7") { continue }  // an event, recorded by readLine
            guard line.count >= 4 else { throw Failure(description: "not SSIP: \(line)") }
            if line.dropFirst(3).first == "-" {
                data.append(String(line.dropFirst(4)))
            } else {
                return (line, data)
            }
        }
    }

    /// One line (without CRLF), nil on timeout; notifications' final lines are recorded as events.
    private var eventLines: [String] = []
    private func readLine(timeout: Double) throws -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                var line = String(decoding: buffer[..<newline], as: UTF8.self)
                if line.hasSuffix("\r") { line.removeLast() }
                buffer.removeSubrange(...newline)
                if line.hasPrefix("7") {
                    eventLines.append(line)
                    if line.dropFirst(3).first == " ", let code = Int(line.prefix(3)),
                       let id = eventLines.first.flatMap({ Int($0.dropFirst(4)) }) {
                        events.append((code, id))
                        eventLines.removeAll()
                    }
                }
                return line
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else { throw Failure(description: "speech-dispatcher closed the connection") }
            buffer += chunk[0..<count]
        }
    }
}

extension RawSSIPClient {
    /// Freezes the speech-dispatcher at `address` for every client, as any other program could: a
    /// mark name holding a line of only a dot, sent without our prevention. Returns once the server
    /// has reported that mark (0.07 s after the SPEAK, measured with 0.11.4), from which moment it
    /// begins nothing more for anyone; it keeps answering commands. Whatever the server is speaking
    /// first is spoken before: the wait for the mark is bounded by `timeout` seconds.
    public static func freezeWithAMark(address: String, timeout: Double = 20) throws {
        let freezer = try RawSSIPClient(address: address, name: "freezer")
        try freezer.command("SET self SSML_MODE on")
        guard let id = try freezer.speakRaw(escaped("<speak><mark name=\"a\n.\nb\"/>x</speak>")) else {
            throw Failure(description: "speech-dispatcher did not queue the freezing text")
        }
        guard freezer.waitForEvent(700, message: id, timeout: timeout) else {
            throw Failure(description: "speech-dispatcher never reached the freezing mark")
        }
    }
}

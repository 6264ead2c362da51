@testable import TestSupport
import Dispatch
import Glibc
import VoiceboxCore
import VoiceboxThreads
import XCTest
@testable import VoiceboxSpeechd

/// The SSIP client against a scripted server on the other end of a socket pair: no speech-dispatcher.
final class SSIPConnectionTests: XCTestCase {
    /// (the owner of our connection, the server's descriptor).
    private func pair(timeout: Double = 2) -> (SSIPTestOwner, Int32) {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        XCTAssertGreaterThanOrEqual(fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK), 0)
        return (SSIPTestOwner(label: "test.ssip.owner", descriptor: fds[0], timeout: timeout), fds[1])
    }

    private func serverWrite(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        XCTAssertEqual(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }, bytes.count)
    }

    /// Reads what the client wrote so far (gives up waiting for `count` bytes after 10 s).
    private func serverRead(_ fd: Int32, atLeast count: Int) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = DispatchTime.now() + 10
        while received.count < count && DispatchTime.now() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0 else { continue }
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { break }
            received += buffer[0..<n]
        }
        return String(decoding: received, as: UTF8.self)
    }

    private final class Results: Sendable {
        let list = Locked<[String]>([])
        func add(_ result: Result<SSIPReply, SynthesizerError>) {
            list.withLock {
                switch result {
                case .success(let reply): $0.append("\(reply.code) \(reply.lines) \(reply.text)")
                case .failure(let error): $0.append("failure \(error)")
                }
            }
        }
        /// Waits for `count` results (gives up after `timeout` seconds: a failure to come at all).
        func wait(for count: Int, timeout: Double = 10) -> [String] {
            let deadline = DispatchTime.now() + timeout
            while list.withLock({ $0.count }) < count && DispatchTime.now() < deadline { usleep(5000) }
            return list.withLock { $0 }
        }
    }

    func testPipelinedRepliesAndEventsInOrder() {
        let (owner, server) = pair()
        defer { close(server); owner.sync { connection in connection.close() } }
        let results = Results()
        let events = Locked<[SSIPEvent]>([])
        owner.sync { connection in
            connection.onEvent = { event in events.withLock { $0.append(event) } }
            connection.send(SSIPText.command("GET", "LANGUAGE")) { results.add($0) }
            connection.send(SSIPText.command("BOGUS")) { results.add($0) }
        }
        XCTAssertEqual(serverRead(server, atLeast: 21), "GET LANGUAGE\r\nBOGUS\r\n")
        serverWrite(server, "251-en-US\r\n251 OK GET RETURNED\r\n702-1\r\n702-2\r\n702 END\r\n500 ERR INVALID COMMAND\r\n")
        XCTAssertEqual(results.wait(for: 2), ["251 [\"en-US\"] OK GET RETURNED", "500 [] ERR INVALID COMMAND"])
        XCTAssertEqual(events.withLock { $0 }, [SSIPEvent(kind: .end, messageID: 1, clientID: 2)])
    }

    /// A command sent after SPEAK must not reach the server before SPEAK's text (it would be read as text).
    func testCommandsWaitBehindSpeakUntilItsTextIsSent() {
        let (owner, server) = pair()
        defer { close(server); owner.sync { connection in connection.close() } }
        let results = Results()
        owner.sync { connection in
            connection.send(SSIPText.command("SPEAK"), text: SSIPText.speakData("Hi")) { results.add($0) }
            connection.send(SSIPText.command("STOP", "self")) { results.add($0) }
        }
        XCTAssertEqual(serverRead(server, atLeast: 7), "SPEAK\r\n")
        serverWrite(server, "230 OK RECEIVING DATA\r\n")
        XCTAssertEqual(serverRead(server, atLeast: 18), "Hi\r\n.\r\nSTOP self\r\n")
        serverWrite(server, "225-7\r\n225 OK MESSAGE QUEUED\r\n210 OK STOPPED\r\n")
        XCTAssertEqual(results.wait(for: 2), ["225 [\"7\"] OK MESSAGE QUEUED", "210 [] OK STOPPED"])
    }

    func testServerClosingMidReplyFailsThePendingCommands() {
        let (owner, server) = pair()
        defer { withExtendedLifetime(owner) {} }
        let results = Results()
        let closed = Locked<String?>(nil)
        owner.sync { connection in
            connection.onClose = { reason in closed.withLock { $0 = reason } }
            connection.send(SSIPText.command("LIST", "SYNTHESIS_VOICES")) { results.add($0) }
            connection.send(SSIPText.command("GET", "RATE")) { results.add($0) }
        }
        serverWrite(server, "249-Voice\ten\tnone\r\n249-Other\te")
        close(server)
        let got = results.wait(for: 2)  // returns as soon as both came
        XCTAssertEqual(got.count, 2, "the pending commands hang: \(got)")
        XCTAssertTrue(got.allSatisfy { $0.hasPrefix("failure") && $0.contains("closed the connection") }, "\(got)")
        XCTAssertEqual(closed.withLock { $0 }, "speech-dispatcher closed the connection in the middle of a reply")
        owner.sync { connection in XCTAssertFalse(connection.isOpen) }
    }

    /// The command fails naming its timeout, and not before the timeout (a lower bound: it holds
    /// however slow the machine is).
    func testNoAnswerFailsAfterTheTimeoutNamingIt() {
        let (owner, server) = pair(timeout: 0.3)
        defer { close(server); withExtendedLifetime(owner) {} }
        let results = Results()
        let start = DispatchTime.now()
        owner.sync { connection in connection.send(SSIPText.command("GET", "RATE")) { results.add($0) } }
        let got = results.wait(for: 1)
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        XCTAssertEqual(got, ["failure unavailable(\"speech-dispatcher did not answer GET RATE within 0.3 s\")"])
        XCTAssertGreaterThanOrEqual(elapsed, 0.29, "failed before its timeout")
    }

    /// The owner's queue, not the server, was late: the answer came in time and sits in the socket
    /// when the deadline fires. It is the answer, not a timeout.
    func testAnAnswerWaitingInTheSocketWhenTheDeadlinePassesIsTaken() {
        for _ in 0..<3 {
            let (owner, server) = pair(timeout: 0.2)
            defer { close(server); owner.sync { connection in connection.close() } }
            let results = Results()
            owner.sync { connection in connection.send(SSIPText.command("GET", "RATE")) { results.add($0) } }
            XCTAssertEqual(serverRead(server, atLeast: 10), "GET RATE\r\n")
            let busy = DispatchSemaphore(value: 0)
            owner.queue.async { busy.wait() }  // the owner is busy ...
            serverWrite(server, "251-0\r\n251 OK GET RATE\r\n")  // ... while the answer arrives ...
            usleep(300_000)  // ... and the deadline (0.2 s) passes: both wait for the owner
            busy.signal()
            XCTAssertEqual(results.wait(for: 1), ["251 [\"0\"] OK GET RATE"])
        }
    }

    func testTheCommandNamedInATimeoutNeverCarriesAValue() {
        XCTAssertEqual(SSIPText.commandName(SSIPText.command("SET", "self", "VOICE", "secret")), "SET self VOICE")
        XCTAssertEqual(SSIPText.commandName(SSIPText.command("LIST", "SYNTHESIS_VOICES")), "LIST SYNTHESIS_VOICES")
        XCTAssertEqual(SSIPText.commandName(SSIPText.command("SPEAK")), "SPEAK")
        XCTAssertEqual(SSIPText.commandName(SSIPText.command("STOP", "4")), "STOP")
        XCTAssertEqual(SSIPText.commandName([]), "a command")
    }

    /// The listing's timeout bounds silence: a slow but steady reply, longer in all than the timeout,
    /// is not cut off. (Its pieces come 0.1 s apart against a 1 s timeout: only a writer held up ten
    /// times as long as it asked could make it fail.)
    func testInactivityTimeoutIsResetByEachByte() {
        let (owner, server) = pair(timeout: 1)
        defer { close(server); owner.sync { connection in connection.close() } }
        let results = Results()
        owner.sync { connection in
            connection.send(SSIPText.command("LIST", "SYNTHESIS_VOICES"), inactivityTimeout: true) { results.add($0) }
        }
        let start = DispatchTime.now()
        for index in 0..<12 { // 1.2 s or more in all, 0.1 s apart
            usleep(100_000)
            serverWrite(server, "249-v\(index)\r\n")
        }
        XCTAssertGreaterThan(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds, 1_000_000_000, "shorter than the timeout")
        serverWrite(server, "249 OK VOICE LIST SENT\r\n")
        XCTAssertEqual(results.wait(for: 1), ["249 [" + (0..<12).map { "\"v\($0)\"" }.joined(separator: ", ") + "] OK VOICE LIST SENT"])
    }
}

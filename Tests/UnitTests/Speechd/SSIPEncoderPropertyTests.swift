import Dispatch
import Glibc
@testable import TestSupport
import VoiceboxCore
import VoiceboxThreads
import XCTest
@testable import VoiceboxSpeechd

/// Every text the service sends passes one SSIP encoder. A scripted server on the other end of a
/// socket pair reads what arrives as speech-dispatcher 0.11.4 does (the message ends at the first
/// `\r\n.\r\n`; then `\r\n..` becomes `\r\n.`, and a leading `..` becomes `.`) and must find, for every
/// text of a seeded corpus, exactly one message holding exactly the intended content.
///
/// The first 2,000 texts of the corpus by default (2.8 s of CPU in a debug build; each of the
/// corpus's 45 pieces comes some 500 times, each pair of pieces side by side about ten times), the
/// whole 20,000 with `VOICEBOX_CORPUS_SIZE=20000` (22 s of CPU; the speech-dispatcher corpus tests
/// take their size from the same variable): run that after changing SSIPText.
final class SSIPEncoderPropertyTests: XCTestCase {
    static let count = ProcessEnvironment.value("VOICEBOX_CORPUS_SIZE").flatMap { Int($0) } ?? 2_000

    func testEveryCorpusTextArrivesAsExactlyOneMessageWithItsContent() throws {
        var corpus = SpeechCorpus(seed: 0x5EED_15)
        let texts = (0..<Self.count).map { index in index % 5 == 4 ? corpus.ssml() : corpus.text() }

        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let owner = SSIPTestOwner(label: "test.ssip.encoder", descriptor: fds[0], timeout: 10)
        defer { owner.sync { $0.close() } }
        let server = ScriptedSpeakServer(fd: fds[1], expected: texts.map { Array(SSIPText.content(of: $0).utf8) })
        let serving = Thread { server.serve() }
        serving.start()

        // One at a time, each waiting for its 225: the server reads a message where speech-dispatcher would.
        let answered = DispatchSemaphore(value: 0)
        let failures = Locked<[String]>([])
        for (index, text) in texts.enumerated() {
            owner.sync { connection in  // send never blocks, and its handler never re-enters the queue
                connection.send(SSIPText.command("SPEAK"), text: SSIPText.speakData(text)) { result in
                    if case .success(let reply) = result, reply.code == 225, reply.lines == ["\(index)"] {
                    } else {
                        failures.withLock { $0.append("#\(index): \(result)") }
                    }
                    answered.signal()
                }
            }
            guard answered.wait(timeout: .now() + 10) == .success else {
                return XCTFail("text #\(index) got no answer: \(text.debugDescription); server: \(server.problems.prefix(3))")
            }
        }
        close(fds[1])
        XCTAssertEqual(failures.withLock { $0 }.prefix(5), [])
        XCTAssertEqual(server.problems.prefix(5), [])
        XCTAssertEqual(server.messages, Self.count)
    }
}

/// Answers SPEAK with 230, reads the message as speech-dispatcher does and compares it with the
/// next expected content; answers 225 with the message's index.
private final class ScriptedSpeakServer: @unchecked Sendable {
    // @unchecked: `problems` and `messages` are written by the serving thread only, and read by the
    // test after that thread's last answer (the semaphore orders them).
    private let fd: Int32
    private let expected: [[UInt8]]
    private var buffer: [UInt8] = []
    private(set) var problems: [String] = []
    private(set) var messages = 0

    init(fd: Int32, expected: [[UInt8]]) {
        self.fd = fd
        self.expected = expected
    }

    func serve() {
        for (index, content) in expected.enumerated() {
            guard let command = line(), command == "SPEAK" else {
                problems.append("#\(index): expected SPEAK, got \(String(describing: buffer.prefix(80)))")
                return
            }
            send("230 OK RECEIVING DATA\r\n")
            guard let raw = message() else { return problems.append("#\(index): the message never ended") }
            messages += 1
            let received = Self.deescape(raw)
            if received != content {
                problems.append("#\(index): got \(String(decoding: received.prefix(60), as: UTF8.self).debugDescription), "
                                + "wanted \(String(decoding: content.prefix(60), as: UTF8.self).debugDescription)")
            }
            // Nothing may follow the message before our answer: a second message would be there.
            if !buffer.isEmpty { problems.append("#\(index): \(buffer.count) bytes after the end marker") }
            send("225-\(index)\r\n225 OK MESSAGE QUEUED\r\n")
        }
    }

    /// speech-dispatcher's deescape_dot.
    static func deescape(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        if data.count >= 2, data[0] == 0x2E, data[1] == 0x2E { out.append(0x2E); index = 2 }
        while index < data.count {
            if index + 3 < data.count, data[index] == 13, data[index + 1] == 10, data[index + 2] == 0x2E, data[index + 3] == 0x2E {
                out += [13, 10, 0x2E]
                index += 4
            } else {
                out.append(data[index])
                index += 1
            }
        }
        return out
    }

    private func line() -> String? {
        while true {
            if let end = buffer.firstIndex(of: 10) {
                let text = String(decoding: buffer[..<end].filter { $0 != 13 }, as: UTF8.self)
                buffer.removeSubrange(...end)
                return text
            }
            guard fill() else { return nil }
        }
    }

    /// The bytes up to the first end marker (a message of only the marker is empty).
    private func message() -> [UInt8]? {
        let marker: [UInt8] = [13, 10, 0x2E, 13, 10]
        while true {
            if buffer.starts(with: [0x2E, 13, 10]) {
                buffer.removeFirst(3)
                return []
            }
            if buffer.count >= marker.count {
                for start in 0...(buffer.count - marker.count) where buffer[start..<(start + marker.count)].elementsEqual(marker) {
                    let content = Array(buffer[..<start])
                    buffer.removeSubrange(..<(start + marker.count))
                    return content
                }
            }
            guard fill() else { return nil }
        }
    }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 5000) > 0 else { return false }
        let count = read(fd, &chunk, chunk.count)
        guard count > 0 else { return false }
        buffer += chunk[0..<count]
        return true
    }

    private func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

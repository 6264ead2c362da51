import CSpeechd
import Dispatch
import Glibc
import Synchronization
import VoiceboxCore

/// Lists the voices of every output module over a separate short-lived connection, on its own queue,
/// so that a listing (speech-dispatcher only lists the current output module's voices, and switching
/// modules is sticky) never changes or delays the speaking connection.
///
/// What speech-dispatcher 0.11.4 with espeak-ng 1.51 reports (measured): one output module
/// `espeak-ng` with 13,362 entries, one per language × variant. The name already carries the variant
/// ("English (Great Britain)" with variant "none", "English (Great Britain)+Annie" with variant
/// "Annie"), names are unique within the module, and `LIST SYNTHESIS_VOICES` is what
/// `SET SYNTHESIS_VOICE` accepts back. So `"<module>/<name>"` is a unique and stable id as is.
/// Languages come as espeak-ng writes them ("en-GB", "en-US", "en-029"): kept verbatim.
/// A whole listing takes about 0.3 s here (connect, LIST OUTPUT_MODULES, then per module SET
/// OUTPUT_MODULE and LIST SYNTHESIS_VOICES; 483 KB of reply for espeak-ng).
final class VoiceLister: Sendable {
    private let queue = DispatchQueue(label: "voicebox.speechd.voices")
    private let configuration: SpeechDispatcherSynthesizer.Configuration
    private let closed = Atomic<Bool>(false)

    static let streamBufferSize = 64 * 1024

    /// A listing connection gives up on a server that stops answering.
    static let replyTimeoutSeconds = 15

    init(configuration: SpeechDispatcherSynthesizer.Configuration) {
        self.configuration = configuration
    }

    func close() {
        closed.store(true, ordering: .relaxed)
    }

    func list() async throws -> [Voice] {
        guard !closed.load(ordering: .relaxed) else {
            throw SynthesizerError.unavailable("the synthesizer was shut down")
        }
        let configuration = self.configuration
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Voice], any Error>) in
            queue.async {
                continuation.resume(with: Result { () throws(SynthesizerError) -> [Voice] in
                    try Self.listNow(configuration)
                })
            }
        }
    }

    static func listNow(_ configuration: SpeechDispatcherSynthesizer.Configuration) throws(SynthesizerError) -> [Voice] {
        let connection = try SpeechdConnector.open(address: configuration.address, autospawn: configuration.autospawn,
                                                   clientName: configuration.clientName, connectionName: "voices",
                                                   mode: SPD_MODE_SINGLE).get().connection
        // libspeechd reads replies through an unbuffered stream: one read(2) per byte, ~483,000 for
        // espeak-ng's list, during which speech-dispatcher sits blocked writing to this socket and
        // serves nobody else (measured: speak() on the other connection took 0.53 s instead of
        // 0.03 s). This connection is strictly request-reply (no notifications), so a read-ahead
        // buffer is safe: 186 reads. glibc keeps its 1-byte buffer unless given one; it must outlive
        // the stream, which spd_close (or a failed read) fcloses.
        let buffer = malloc(Self.streamBufferSize)!.assumingMemoryBound(to: CChar.self)
        defer {
            spd_close(connection) // fcloses the stream unless a failed read already did
            free(buffer)
        }
        if let stream = connection.pointee.stream {
            setvbuf(stream, buffer, _IOFBF, Self.streamBufferSize)
        }
        var timeout = timeval(tv_sec: replyTimeoutSeconds, tv_usec: 0)
        _ = setsockopt(connection.pointee.socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(connection.pointee.socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        // In single mode a reply that cannot be read makes libspeechd drop the stream.
        func gone() -> Bool { SpeechdConnector.eventThreadEnded(connection) }

        guard let moduleList = spd_list_modules(connection) else {
            throw .unavailable(gone() ? "speech-dispatcher closed the connection"
                                      : "speech-dispatcher did not list its output modules")
        }
        var modules: [String] = []
        var index = 0
        while let module = moduleList[index] {
            modules.append(String(cString: module))
            index += 1
        }
        free_spd_modules(moduleList)

        var voices: [Voice] = []
        for module in modules {
            guard spd_set_output_module(connection, module) == 0 else {
                if gone() { throw .unavailable("speech-dispatcher closed the connection") }
                continue
            }
            guard let entries = Self.synthesisVoices(connection) else {
                if gone() { throw .unavailable("speech-dispatcher closed the connection") }
                continue
            }
            for entry in entries {
                voices.append(Voice(id: "\(module)/\(entry.name)", name: entry.name, language: entry.language,
                                    variant: entry.variant, engine: module))
            }
        }
        return voices
    }

    struct Entry: Equatable {
        var name: String
        var language: String
        var variant: String
    }

    /// `LIST SYNTHESIS_VOICES` for the current output module. The same command and the same split as
    /// libspeechd's spd_list_synthesis_voices (one `NNN-name<TAB>language<TAB>variant` line per voice),
    /// but parsed in one pass: spd_list_synthesis_voices finds line i by scanning the reply from its
    /// start, O(n²): measured 1.1 s of CPU for espeak-ng's 13,362 lines (483 KB) out of a 1.3 s listing,
    /// and tens of minutes under ThreadSanitizer, which checks every strstr.
    static func synthesisVoices(_ connection: UnsafeMutablePointer<SPDConnection>) -> [Entry]? {
        var reply: UnsafeMutablePointer<CChar>? = nil
        let status = spd_execute_command_with_reply(connection, "LIST SYNTHESIS_VOICES", &reply)
        defer { free(reply) } // libspeechd allocates the reply even for an error code
        guard status == 0, let reply else { return nil }
        return parseVoiceList(UnsafeRawBufferPointer(start: reply, count: strlen(reply)))
    }

    /// Lines `NNN-payload\r\n` up to the final `NNN text\r\n`; payload fields split by tabs, missing
    /// ones empty / "none" as libspeechd leaves them NULL.
    static func parseVoiceList(_ bytes: UnsafeRawBufferPointer) -> [Entry] {
        var entries: [Entry] = []
        var lineStart = 0
        let count = bytes.count
        while lineStart < count {
            var lineEnd = lineStart
            while lineEnd < count && bytes[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
            var contentEnd = lineEnd
            if contentEnd > lineStart && bytes[contentEnd - 1] == UInt8(ascii: "\r") { contentEnd -= 1 }
            // A data line has a 3-digit code and '-'; the last line has a space and ends the list.
            guard contentEnd - lineStart >= 4, bytes[lineStart + 3] == UInt8(ascii: "-") else { break }
            var fields: [String] = []
            var fieldStart = lineStart + 4
            var index = fieldStart
            while index <= contentEnd && fields.count < 3 {
                if index == contentEnd || bytes[index] == UInt8(ascii: "\t") {
                    fields.append(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[fieldStart..<index]),
                                         as: UTF8.self))
                    fieldStart = index + 1
                }
                index += 1
            }
            if let name = fields.first, !name.isEmpty {
                entries.append(Entry(name: name, language: fields.count > 1 ? fields[1] : "",
                                     variant: fields.count > 2 ? fields[2] : "none"))
            }
            lineStart = lineEnd + 1
        }
        return entries
    }
}

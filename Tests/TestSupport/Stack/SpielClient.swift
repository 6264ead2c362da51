import Foundation
import Glibc
import VoiceboxBus
import VoiceboxContract
import VoiceboxCore
import XCTest

/// A client that does what libspiel 1.0 does (spiel-collect-providers.c, spiel-speaker.c,
/// spiel-provider-src.c and libspeechprovider's stream reader): it lists the activatable and the
/// running names ending in `.Speech.Provider`, makes the object path from the name, reads Name and
/// Voices with GetAll, calls Synthesize with the write end of a new pipe (closing its own copy)
/// for every utterance at once, and reads each pipe only when its utterance is next.
struct SpielClient {
    let connection: BusConnection

    /// ListVoices' "English (Great Britain)" is espeak-ng's `en`: what espeak-ng -v en renders.
    static let voice = "espeak-ng/English (Great Britain)"

    static let suffix = ".Speech.Provider"

    /// The providers on the bus: activatable ones and running ones, as libspiel collects them.
    func providerNames() async throws -> [String] {
        var names = Set<String>()
        for method in ["ListActivatableNames", "ListNames"] {
            let reply = try await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                  interface: "org.freedesktop.DBus", member: method)
            for name in reply.first?.arrayElements?.compactMap(\.string) ?? [] where name.hasSuffix(Self.suffix) {
                names.insert(name)
            }
        }
        return names.sorted()
    }

    /// libspiel's object path: the name with dots as slashes.
    static func objectPath(of name: String) -> String { "/" + name.replacingOccurrences(of: ".", with: "/") }

    /// Name and Voices with one GetAll, as GDBusProxy loads them (activating the provider).
    func properties(of name: String, timeout: Duration = .seconds(30)) async throws -> (name: String, voices: [ProviderVoice]) {
        let reply = try await connection.call(destination: name, path: Self.objectPath(of: name),
                                              interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                                              arguments: [.string(SpeechProvider.interfaceName)], timeout: timeout)
        let entries = reply.first?.vardictEntries ?? [:]
        return (entries["Name"]?.string ?? "", try entries["Voices"].map { try [ProviderVoice](busValue: $0) } ?? [])
    }

    /// Synthesize into a new pipe; returns the read end (ours to close). The reply comes before
    /// anything is read, or the call fails.
    func synthesize(_ name: String, text: String, voice: String, pitch: Double = 1, rate: Double = 1, ssml: Bool = false,
                    language: String = "", timeout: Duration = .seconds(25)) async throws -> Int32 {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer { close(ends[1]) }  // libspiel closes its copy of the write end at once
        do {
            _ = try await connection.call(destination: name, path: Self.objectPath(of: name), interface: SpeechProvider.interfaceName,
                                          member: "Synthesize",
                                          arguments: [.unixFD(ends[1]), .string(text), .string(voice), .double(pitch), .double(rate),
                                                      .boolean(ssml), .string(language)], timeout: timeout)
        } catch {
            close(ends[0])
            throw error
        }
        return ends[0]
    }

    /// The D-Bus error name Synthesize fails with (nil when it succeeds), for a descriptor of the
    /// caller's choosing.
    func synthesizeError(_ name: String, fd: Int32, text: String = "hello", voice: String, pitch: Double = 1,
                         rate: Double = 1, ssml: Bool = false, language: String = "") async -> String? {
        do {
            _ = try await connection.call(destination: name, path: Self.objectPath(of: name), interface: SpeechProvider.interfaceName,
                                          member: "Synthesize",
                                          arguments: [.unixFD(fd), .string(text), .string(voice), .double(pitch), .double(rate),
                                                      .boolean(ssml), .string(language)])
            return nil
        } catch {
            return error.name
        }
    }
}

/// An audio/x-spiel stream as libspeechprovider's reader takes it apart.
struct SpielStreamContents: Equatable {
    struct Event: Equatable, CustomStringConvertible {
        var type: UInt8
        var start: Int
        var end: Int
        var name: String
        var description: String { "\(["?", "word", "sentence", "range", "mark"][Int(min(type, 4))])(\(start),\(end)\(name.isEmpty ? "" : " \(name)"))" }
    }

    enum Piece: Equatable {
        case audio(Int)
        case event(Event)
    }

    var header: String
    var pieces: [Piece] = []
    var audio: [UInt8] = []
    var events: [Event] { pieces.compactMap { if case .event(let event) = $0 { event } else { nil } } }
    /// The largest chunk seen (a chunk is written whole, at most PIPE_BUF).
    var largestChunk = 0

    static func parse(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> SpielStreamContents {
        var contents = SpielStreamContents(header: String(decoding: bytes.prefix(4), as: UTF8.self))
        var index = 4
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        while index < bytes.count {
            switch bytes[index] {
            case 1 where index + 5 <= bytes.count:
                let length = u32(index + 1)
                guard index + 5 + length <= bytes.count else { XCTFail("a truncated audio chunk", file: file, line: line); return contents }
                contents.audio += bytes[(index + 5)..<(index + 5 + length)]
                contents.pieces.append(.audio(length))
                contents.largestChunk = max(contents.largestChunk, 5 + length)
                index += 5 + length
            case 2 where index + 14 <= bytes.count:  // type, event type, start, end, name length, name
                let length = u32(index + 10)
                guard index + 14 + length <= bytes.count else { XCTFail("a truncated event", file: file, line: line); return contents }
                let name = String(decoding: bytes[(index + 14)..<(index + 14 + length)], as: UTF8.self)
                contents.pieces.append(.event(Event(type: bytes[index + 1], start: u32(index + 2), end: u32(index + 6), name: name)))
                index += 14 + length
            default:
                XCTFail("chunk type \(bytes[index]) at byte \(index)", file: file, line: line)
                return contents
            }
        }
        return contents
    }
}

/// Everything a descriptor gives until its end (bounded).
func readAll(_ fd: Int32, timeout: Duration = .seconds(60)) async throws -> [UInt8] {
    let deadline = ContinuousClock.now + timeout
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 10) >= 0 || errno == EINTR else { throw POSIXError(.EIO) }
        if entry.revents != 0 {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count > 0 { bytes += buffer[0..<count] }
        }
        guard ContinuousClock.now < deadline else {
            struct Timeout: Error {}
            throw Timeout()
        }
        await Task.yield()
    }
}

extension ServiceHarness {
    /// The provider's name comes once the voices are listed (about 1.5 s after the start).
    /// Start-up over: the voices cached, the speech provider's engines probed and their spare
    /// modules started (each holds three descriptors while it waits, which a test counting
    /// voiceboxd's descriptors must not take for a leak).
    func waitUntilSettled() async throws {
        try await waitUntil("the voices to be cached", timeout: .seconds(20)) {
            ((try? await self.property("VoiceCount"))?.uint32 ?? 0) > 0
        }
        try await waitForProvider()
        let pid = daemon.pid
        try await waitUntil("the spare modules", timeout: .seconds(30)) {
            ServiceProcesses.modules(of: pid).count >= ServiceProcesses.spareModules
        }
    }

    func waitForProvider() async throws {
        let pid = UInt32(daemon.pid), client = client
        try await waitUntil("voiceboxd to own \(SpeechProvider.busName)", timeout: .seconds(30)) {
            let owner = try? await client.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                               interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID",
                                               arguments: [.string(SpeechProvider.busName)])
            return owner?.first?.uint32 == pid
        }
    }
}

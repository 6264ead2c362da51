import Glibc
import CSeccomp
import VoiceboxContract
import VoiceboxCore
import VoiceboxSndfile

// voicebox-worker: the engine side of the worker protocol (see WorkerProtocol, which documents
// how the service starts it and what it says). Started by voiceboxd, never by people.

/// Writes all of `bytes` to standard output (or `descriptor`); a closed pipe or socket ends the
/// process (SIGPIPE): the service no longer wants the work.
func send(_ bytes: [UInt8], to descriptor: Int32 = 1) {
    var offset = 0
    while offset < bytes.count {
        let wrote = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if wrote < 0 {
            if errno == EINTR { continue }
            exit(1)
        }
        offset += wrote
    }
}

/// Samples as `S` messages, none over the protocol's payload limit.
func sendSamples(_ samples: [Int16]) {
    var start = 0
    while start < samples.count {
        let end = min(samples.count, start + WorkerProtocol.maximumPayload / 2)
        send(WorkerProtocol.samples(samples[start..<end]))
        start = end
    }
}

func fail(_ message: String, status: Int32) -> Never {
    let line = Array("voicebox-worker: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(status)
}

/// `--key value` pairs after the mode.
func options(_ arguments: ArraySlice<String>) -> [String: String] {
    var result: [String: String] = [:]
    var rest = arguments
    while let key = rest.popFirst() {
        guard key.hasPrefix("--"), let value = rest.popFirst() else { fail("unexpected argument \(key)", status: 64) }
        result[String(key.dropFirst(2))] = value
    }
    return result
}

/// Reads standard input as audio and sends it as 16 kHz samples.
func readAudioFile(_ options: [String: String]) -> Never {
    guard let parent = options["parent"].flatMap({ pid_t($0) }), let name = options["name"] else {
        fail("audio-file needs --parent PID and --name NAME", status: 64)
    }
    var raw: RawAudioFormat?
    if let layout = options["raw"] {
        let parts = layout.split(separator: ":").compactMap { Int($0) }
        guard parts.count == 2 else { fail("--raw RATE:CHANNELS", status: 64) }
        raw = RawAudioFormat(sampleRate: parts[0], channels: parts[1])
    }
    if let why = Confinement.apply(parent: parent) {
        send(WorkerProtocol.failure("\(name): the audio file reader cannot confine itself (\(why))"))
        exit(1)
    }
    do {
        let reader = try AudioFileReader(descriptor: 0, name: name, raw: raw)
        send(WorkerProtocol.header(duration: reader.duration))
        while true {
            let samples = try reader.read(maxSamples: WorkerProtocol.samplesPerMessage)
            if samples.isEmpty { break }
            sendSamples(samples)
        }
        send(WorkerProtocol.encode(.end))
    } catch RecognitionError.unreadableAudio(let why) {
        send(WorkerProtocol.failure(why))
    } catch {
        send(WorkerProtocol.failure("\(name): \(error)"))
    }
    exit(0)
}

/// For the tests of the confinement: confines itself as a worker does, then tries `what` (on
/// `path` where it takes one). Prints what happened; a call the filter kills for never returns.
/// `decoder:WHAT` probes a decoder worker's confinement.
func probeConfinement(_ probe: String, _ path: String?) -> Never {
    let parent = getppid()
    let decoder = probe.hasPrefix("decoder:")
    let what = decoder ? String(probe.dropFirst("decoder:".count)) : probe
    if let why = Confinement.apply(parent: parent, readsFiles: decoder) { fail(why, status: 1) }
    func say(_ name: String, _ result: Int) {
        print(result >= 0 ? "\(name): allowed" : "\(name): refused (\(String(cString: strerror(errno))))")
    }
    switch (what, path) {
    case ("socket", _): say(what, Int(socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)))
    case ("exec", _):
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        say(what, Int(execv("/bin/true", arguments)))
    case ("io_uring", _): say(what, voicebox_io_uring_setup())
    case ("ptrace", _): say(what, voicebox_ptrace_attach(parent))
    case ("kill", _): say(what, Int(kill(parent, 0)))
    case ("fork", _):
        let child = fork()
        if child == 0 { _exit(0) }
        say(what, Int(child))
    case ("write", let path?): say(what, Int(open(path, O_WRONLY | O_CREAT, 0o600)))
    case ("read", let path?): say(what, Int(open(path, O_RDONLY)))
    case ("truncate", let path?): say(what, Int(truncate(path, 0)))
    case ("unlink", let path?): say(what, Int(unlink(path)))
    case ("rename", let path?): say(what, Int(rename(path, path + ".renamed")))
    case ("abort", _): abort()  // its own SIGABRT is allowed
    case ("tiocsti", _), ("tiocsti-high", _):
        // Types a character into the terminal standard error leads to, if it is one.
        var character: CChar = 0x61
        let request = UInt(0x5412) | (what == "tiocsti-high" ? UInt(1) << 32 : 0)
        say(what, voicebox_ioctl(2, request, &character))
    case ("tcgets", _):
        var attributes = termios()
        say(what, voicebox_ioctl(2, UInt(0x5401), &attributes))
    default: fail("probe-confinement [decoder:]socket|exec|io_uring|ptrace|kill|fork|abort|tiocsti|tiocsti-high|tcgets, or [decoder:]write|read|truncate|unlink|rename PATH", status: 64)
    }
    exit(0)
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case WorkerProtocol.audioFileMode: readAudioFile(options(arguments.dropFirst()))
case WorkerProtocol.audioStreamMode: StreamConversion.run(options(arguments.dropFirst()))
case WorkerProtocol.decoderMode: Decoding.run(options(arguments.dropFirst()))
case WorkerProtocol.outputModuleMode: ModuleHost.run(options(arguments.dropFirst()))
case "probe-confinement": probeConfinement(arguments.dropFirst().first ?? "", arguments.dropFirst(2).first)
default: fail("started by voiceboxd only (modes: \(WorkerProtocol.audioFileMode), \(WorkerProtocol.audioStreamMode), "
               + "\(WorkerProtocol.decoderMode), "
               + "\(WorkerProtocol.outputModuleMode), probe-confinement)", status: 64)
}

import Foundation

/// dictate's cues: a short rising tone when listening starts, a falling one when it ends,
/// played through the sound server with paplay (never the terminal bell). The tones are
/// written at run time as WAV files; playing never delays listening (paplay runs on its own and
/// nothing waits for it), and a missing paplay or sound server only means silence.
enum Cue {
    case start, end

    private var frequencies: (Double, Double) {
        switch self {
        case .start: (660, 990)
        case .end: (990, 660)
        }
    }

    func play() {
        guard let paplay = Cue.lookUp("paplay"), let file = try? file() else { return }
        let words: [String] = [paplay, "--property=media.role=event", file]
        let argv = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        var child: pid_t = 0
        guard posix_spawn(&child, paplay, &actions, nil, argv, environ) == 0 else { return }
        let pid = child
        // Reaped on a thread of its own, bounded: a stuck sound server must not leave it behind.
        Thread.detachNewThread {
            var status: Int32 = 0
            for _ in 0..<500 {
                if waitpid(pid, &status, WNOHANG) != 0 { return }
                usleep(10_000)
            }
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
        }
    }

    /// The tone's file in $XDG_RUNTIME_DIR (or /tmp), written once.
    private func file() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let directory = environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? NSTemporaryDirectory()
        let name = "voicebox-cue-\(self == .start ? "start" : "end")-\(getuid()).wav"
        let path = (directory as NSString).appendingPathComponent(name)
        let data = Cue.wav(Cue.tone(from: frequencies.0, to: frequencies.1))
        if let existing = FileManager.default.contents(atPath: path), existing == data { return path }
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        return path
    }

    static let sampleRate = 22050

    /// 120 ms gliding from one frequency to the other, with soft edges (no click), at a modest volume.
    static func tone(from start: Double, to end: Double, seconds: Double = 0.12) -> [Int16] {
        let count = Int(Double(sampleRate) * seconds)
        var phase = 0.0
        return (0..<count).map { index in
            let t = Double(index) / Double(count)
            phase += 2 * Double.pi * (start + (end - start) * t) / Double(sampleRate)
            let envelope = min(1, t / 0.1, (1 - t) / 0.2)
            return Int16((sin(phase) * envelope * 0.3 * Double(Int16.max)).rounded())
        }
    }

    /// A 16-bit mono PCM WAV file.
    static func wav(_ samples: [Int16]) -> Data {
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let payload = UInt32(samples.count * 2)
        data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36) + payload); data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); append(UInt32(16)); append(UInt16(1)); append(UInt16(1))
        append(UInt32(sampleRate)); append(UInt32(sampleRate * 2)); append(UInt16(2)); append(UInt16(16))
        data.append(contentsOf: Array("data".utf8)); append(payload)
        for sample in samples { append(sample) }
        return data
    }

    private static func lookUp(_ program: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(program)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}

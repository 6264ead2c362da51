import Foundation
import VoiceboxInsertion

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
        guard let paplay = Programs.lookUp("paplay"), let file = try? file() else { return }
        // On a thread of its own, so nothing waits for it; bounded, so a stuck sound server does not
        // leave it behind.
        Thread.detachNewThread {
            _ = try? ChildProcess.run(paplay, Cue.paplayArguments(file), timeout: .seconds(5))
        }
    }

    /// As client "Voicebox": the service spares Voicebox's own streams when it pauses others for
    /// the listening the cue announces.
    static func paplayArguments(_ file: String) -> [String] {
        ["--client-name=Voicebox", "--property=media.role=event", file]
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
}

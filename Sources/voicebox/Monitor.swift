import Foundation
import VoiceboxBus
import VoiceboxContract

extension Client {
    /// `monitor`: every signal of the service, one line each (its name, then its arguments), until
    /// interrupted (then exit 0).
    func monitor() async throws -> ExitStatus {
        let speech = speech
        // Lines are written in the order the bus delivers them, one queue for all.
        let queue = DispatchQueue(label: "voicebox.monitor")
        let print: @Sendable (String) -> Void = { line in queue.async { Output.line(line) } }
        try await checked { () async throws(DBusError) in
            _ = try await speech.subscribe(Speech1.speechStarted) { id in print("\(Speech1.speechStarted.name) \(id)") }
            _ = try await speech.subscribe(Speech1.speechMark) { id, name in print("\(Speech1.speechMark.name) \(id) \(name)") }
            _ = try await speech.subscribe(Speech1.speechFinished) { id, reason in
                print("\(Speech1.speechFinished.name) \(id) \(reason)")
            }
            _ = try await speech.subscribe(Speech1.voicesChanged) { print("\(Speech1.voicesChanged.name)") }
            _ = try await speech.subscribe(Speech1.recognitionStarted) { id in print("\(Speech1.recognitionStarted.name) \(id)") }
            _ = try await speech.subscribe(Speech1.recognitionPartial) { id, text in
                print("\(Speech1.recognitionPartial.name) \(id) \(quoted(text))")
            }
            _ = try await speech.subscribe(Speech1.audioLevel) { id, level in
                print("\(Speech1.audioLevel.name) \(id) \(fixed(level))")
            }
            _ = try await speech.subscribe(Speech1.recognitionProgress) { id, fraction in
                print("\(Speech1.recognitionProgress.name) \(id) \(fixed(fraction))")
            }
            _ = try await speech.subscribe(Speech1.recognitionFinished) { id, text in
                print("\(Speech1.recognitionFinished.name) \(id) \(quoted(text))")
            }
            _ = try await speech.subscribe(Speech1.audioInterruption) { state, info in
                let info = describe((try? VarDict(busValue: info.busValue)) ?? VarDict())
                print("\(Speech1.audioInterruption.name) \(state.rawValue) \(info)")
            }
        }
        // Said on standard error, so that the output is only signals: from here on nothing is missed.
        Output.error("watching \(Speech1.busName); Ctrl-C ends")
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Interrupts.onInterrupt { _ in done.resume() }
        }
        return .ok
    }
}

/// `"text"` with its quotes and backslashes escaped, so a line stays one line.
func quoted(_ text: String) -> String {
    "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        .replacingOccurrences(of: "\n", with: "\\n") + "\""
}

func fixed(_ number: Double) -> String { String(format: "%.2f", number) }

/// AudioInterruption's info as `reason=speaking id=3 key=value ...`: reason and id first, the rest by name.
func describe(_ info: VarDict) -> String {
    let first = ["reason", "id"]
    let keys = first.filter { info.entries[$0] != nil } + info.entries.keys.filter { !first.contains($0) }.sorted()
    return keys.map { key in "\(key)=\(describe(info.entries[key]!))" }.joined(separator: " ")
}

func describe(_ value: DBusValue) -> String {
    switch value.unwrapped {
    case .string(let s): s.contains(" ") || s.isEmpty ? quoted(s) : s
    case .double(let d): fixed(d)
    case .array(_, let items): "[" + items.map(describe).joined(separator: ",") + "]"
    case .boolean(let b): String(b)
    case .uint64(let n): String(n)
    case .uint32(let n): String(n)
    case .int32(let n): String(n)
    case .int64(let n): String(n)
    default: "\(value.unwrapped)"
    }
}

@testable import TestSupport
@testable import VoiceboxCore
import VoiceboxContract

/// A signal as `RecordingBus` saw it, in a shape tests can compare. Made from the service's own
/// declarations (`Speech1`) by name; a signal this does not know stops the test run.
enum RecordedSignal: Equatable {
    case speechStarted(UInt64)
    case speechMark(UInt64, String)
    case speechFinished(UInt64, SynthesisEnd)
    case voicesChanged
    case recognitionStarted(UInt64)
    case recognitionPartial(UInt64, String)
    case audioLevel(UInt64, Double)
    case recognitionProgress(UInt64, Double)
    case recognitionFinished(UInt64, String)
    case audioInterruption(InterruptionState, InterruptionInfo)

    init(_ name: String, _ values: [any Sendable]) {
        func value<T>(_ index: Int, _: T.Type = T.self) -> T {
            guard index < values.count, let value = values[index] as? T else { fatalError("\(name): argument \(index) is not a \(T.self)") }
            return value
        }
        switch name {
        case Speech1.speechStarted.name: self = .speechStarted(value(0))
        case Speech1.speechMark.name: self = .speechMark(value(0), value(1))
        case Speech1.speechFinished.name: self = .speechFinished(value(0), value(1))
        case Speech1.voicesChanged.name: self = .voicesChanged
        case Speech1.recognitionStarted.name: self = .recognitionStarted(value(0))
        case Speech1.recognitionPartial.name: self = .recognitionPartial(value(0), value(1))
        case Speech1.audioLevel.name: self = .audioLevel(value(0), value(1))
        case Speech1.recognitionProgress.name: self = .recognitionProgress(value(0), value(1))
        case Speech1.recognitionFinished.name: self = .recognitionFinished(value(0), value(1))
        case Speech1.audioInterruption.name: self = .audioInterruption(value(0), value(1))
        default: fatalError("RecordedSignal does not know \(name)")
        }
    }
}

/// A property change as `RecordingBus` saw it.
enum RecordedProperty: Equatable {
    case version(String)
    case speaking(Bool)
    case paused(Bool)
    case interrupted(Bool)
    case voiceCount(UInt32)
    case listening(Bool)
    case listeningID(UInt64)
    case dictationID(UInt64)
    case recognitionLanguages([String])

    init(_ name: String, _ value: any Sendable) {
        func typed<T>(_: T.Type = T.self) -> T {
            guard let typed = value as? T else { fatalError("\(name): \(value) is not a \(T.self)") }
            return typed
        }
        switch name {
        case Speech1.version.name: self = .version(typed())
        case Speech1.speaking.name: self = .speaking(typed())
        case Speech1.paused.name: self = .paused(typed())
        case Speech1.interrupted.name: self = .interrupted(typed())
        case Speech1.voiceCount.name: self = .voiceCount(typed())
        case Speech1.listening.name: self = .listening(typed())
        case Speech1.listeningID.name: self = .listeningID(typed())
        case Speech1.dictationID.name: self = .dictationID(typed())
        case Speech1.recognitionLanguages.name: self = .recognitionLanguages(typed())
        default: fatalError("RecordedProperty does not know \(name)")
        }
    }
}

import Synchronization
import VoiceboxBus
import VoiceboxCore

/// The D-Bus face of the service: turns calls into service requests and the service's
/// signals and properties into bus traffic.
///
/// Calls are handed from the bus thread to one task through an ordered stream, so that
/// two Speak calls from one caller reach the engine in the order they were made. Calls that
/// take long (Recognize, Speak with wait, a first ListVoices) are admitted in that order and
/// then answered from a task of their own, so they never hold up the calls behind them.
public final class SpeechObject: Sendable {
    private let connection: BusConnection
    private let object: ExportedObject
    private let calls: AsyncStream<MethodCall>.Continuation
    private let incoming: AsyncStream<MethodCall>
    private let voiceReplies = VoiceReplies()

    public init(connection: BusConnection) throws(DBusError) {
        self.connection = connection
        let (stream, continuation) = AsyncStream<MethodCall>.makeStream()
        incoming = stream
        calls = continuation
        let voiceReplies = voiceReplies
        object = try connection.export(path: Speech1.objectPath, interfaces: [Speech1.interface]) { call in
            if call.member == "ListVoices", let reply = voiceReplies[call.arguments.first?.string ?? ""] {
                call.reply([reply])
            } else {
                continuation.yield(call)
            }
        }
    }

    /// Serves calls until the connection closes.
    public func serve(_ service: SpeechService, recognition: RecognitionService) async {
        for await call in incoming {
            await handle(call, service: service, recognition: recognition)
        }
    }

    private func handle(_ call: MethodCall, service: SpeechService, recognition: RecognitionService) async {
        let args = call.arguments
        do throws(VoiceboxError) {
            switch call.member {
            case "Speak":
                let options = try SpeakOptions(try Self.options(args[1]))
                let text = args[0].string ?? ""
                if options.wait {
                    // Waiting for the end must not hold up the calls behind it.
                    Task {
                        do throws(VoiceboxError) {
                            call.reply([.uint64(try await service.speak(text, options: options, caller: call.sender))])
                        } catch {
                            call.fail(DBusError(name: error.dbusName, message: error.message))
                        }
                    }
                } else {
                    call.reply([.uint64(try await service.speak(text, options: options, caller: call.sender))])
                }
            case "StopSpeaking":
                try await service.stopSpeaking(args[0].uint64 ?? 0, caller: call.sender)
                call.reply()
            case "PauseSpeaking":
                try await service.pauseSpeaking()
                call.reply()
            case "ResumeSpeaking":
                try await service.resumeSpeaking()
                call.reply()
            case "ListVoices":
                let language = args[0].string ?? ""
                // The first listing can take a while: don't hold up other calls meanwhile.
                Task {
                    do throws(VoiceboxError) {
                        let generation = voiceReplies.generation
                        let reply = Self.voiceArray(try await service.listVoices(language: language))
                        voiceReplies.store(reply, for: language, generation: generation)
                        call.reply([reply])
                    } catch {
                        call.fail(DBusError(name: error.dbusName, message: error.message))
                    }
                }
            case "RefreshVoices":
                await service.refreshVoices()
                call.reply()
            case "Recognize", "StopRecognition", "CancelRecognition":
                try await handleRecognition(call, recognition: recognition)
            default:
                call.fail(DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no method \(call.member)"))
            }
        } catch {
            call.fail(DBusError(name: error.dbusName, message: error.message))
        }
    }

    static func voiceArray(_ voices: [Voice]) -> DBusValue {
        .array(.structure([.string, .string, .string, .string, .string]), voices.map { voice in
            .structure([.string(voice.id), .string(voice.name), .string(voice.language), .string(voice.variant), .string(voice.engine)])
        })
    }

    /// An `a{sv}` as the core's option values.
    static func options(_ value: DBusValue) throws(VoiceboxError) -> [String: OptionValue] {
        guard let entries = value.vardictEntries else { throw .invalidArgument("options must be a{sv}") }
        return entries.mapValues { value in
            switch value {
            case .string(let s): .string(s)
            case .double(let d): .double(d)
            case .boolean(let b): .bool(b)
            case .array(.string, let items): .strings(items.compactMap(\.string))
            default: .other(signature: value.type.signature)
            }
        }
    }
}

extension SpeechObject: ServiceBus {
    public func emit(_ signal: ServiceSignal) {
        let (member, arguments): (String, [DBusValue]) = switch signal {
        case .speechStarted(let id): ("SpeechStarted", [.uint64(id)])
        case .speechMark(let id, let name): ("SpeechMark", [.uint64(id), .string(name)])
        case .speechFinished(let id, let end): ("SpeechFinished", [.uint64(id), .string(end.rawValue)])
        case .voicesChanged: ("VoicesChanged", [])
        case .recognitionStarted(let id): ("RecognitionStarted", [.uint64(id)])
        case .recognitionPartial(let id, let text): ("RecognitionPartial", [.uint64(id), .string(text)])
        case .audioLevel(let id, let level): ("AudioLevel", [.uint64(id), .double(level)])
        case .recognitionProgress(let id, let fraction): ("RecognitionProgress", [.uint64(id), .double(fraction)])
        case .recognitionFinished(let id, let text): ("RecognitionFinished", [.uint64(id), .string(text)])
        }
        if signal == .voicesChanged { voiceReplies.removeAll() }
        connection.emit(path: Speech1.objectPath, interface: Speech1.interfaceName, member: member, arguments: arguments)
    }

    public func publish(_ property: ServiceProperty) {
        let (name, value): (String, DBusValue) = switch property {
        case .version(let v): ("Version", .string(v))
        case .speaking(let b): ("Speaking", .boolean(b))
        case .voiceCount(let n): ("VoiceCount", .uint32(n))
        case .listening(let b): ("Listening", .boolean(b))
        case .recognitionLanguages(let tags): ("RecognitionLanguages", .stringArray(tags))
        }
        object.setProperty(name, of: Speech1.interfaceName, to: value)
    }

    public func watchCaller(_ caller: String, onVanish: @escaping @Sendable (String) -> Void) -> UInt64 {
        connection.watchPeer(caller, onVanish: onVanish)
    }

    public func unwatchCaller(_ token: UInt64) {
        connection.unwatchPeer(token)
    }
}

/// ListVoices replies already built, by lower-cased language, until the voices change: answered
/// on the bus thread at once, with no hop through the service.
final class VoiceReplies: Sendable {
    /// The generation counts invalidations, so an answer computed from an older list is not kept.
    private let state = Mutex<(generation: UInt64, replies: [String: DBusValue])>((0, [:]))

    subscript(language: String) -> DBusValue? {
        state.withLock { $0.replies[language.lowercased()] }
    }

    var generation: UInt64 { state.withLock { $0.generation } }

    func store(_ reply: DBusValue, for language: String, generation: UInt64) {
        state.withLock { if $0.generation == generation { $0.replies[language.lowercased()] = reply } }
    }

    func removeAll() { state.withLock { $0 = ($0.generation + 1, [:]) } }
}

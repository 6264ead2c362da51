import VoiceboxCore

/// Asks speech-dispatcher, on a short connection of its own, for an output module's voices: the one
/// question it cannot answer without that module. Measured with 0.11.4: a server speaking another
/// client's text answers in 0.2–0.8 s; one frozen by a bad index mark answers 321 at once; one
/// whose module is stopped does not answer at all.
enum SpeechdProbe {
    enum Verdict: Sendable, Equatable {
        case answering
        /// Known to be unable to speak.
        case wedged(String)
        /// No answer in time (only from `voices`; `health` decides what it means).
        case silent(String)
    }

    /// Whether speech-dispatcher can still speak. Definitive answers first: a process of it stopped
    /// (SIGSTOP) is wedged; a voice list that fails (321: the module crashed, or the server is frozen
    /// by a bad mark) is wedged; a list that comes is not. A list that does not come in time is no
    /// verdict by itself: under load, or with a module listing 13,000 voices, it took 2.5–3 s on
    /// an idle server. Then the server and its modules are looked at (see
    /// SpeechdServerProcess.activity): if any did anything while we waited, it is busy, not wedged.
    /// `completion` runs once, from a task.
    static func health(_ configuration: SpeechDispatcherSynthesizer.Configuration, timeout: Double, module: String?,
                       completion: @escaping @Sendable (Verdict) -> Void) {
        let conversation = SSIPConversation(label: "voicebox.speechd.probe")
        Task { completion(await conversation.health(configuration, timeout: timeout, module: module)) }
    }

    /// Never autospawns; every reply is bounded by `timeout` seconds (the listing by the silence
    /// between reads). `completion` runs once, from a task.
    static func voices(_ configuration: SpeechDispatcherSynthesizer.Configuration, timeout: Double, module: String?,
                       completion: @escaping @Sendable (Verdict) -> Void) {
        let conversation = SSIPConversation(label: "voicebox.speechd.probe")
        Task { completion(await conversation.voices(configuration, timeout: timeout, module: module)) }
    }
}

extension SSIPConversation {
    /// Reading /proc and opening the socket happen on this conversation's own queue.
    fileprivate func health(_ configuration: SpeechDispatcherSynthesizer.Configuration, timeout: Double,
                            module: String?) async -> SpeechdProbe.Verdict {
        let server = SpeechdServerProcess.find(address: configuration.address)
        if let server, let stopped = server.stopped.first {
            let what = stopped == server.pid ? "speech-dispatcher (pid \(stopped))" : "its output module (pid \(stopped))"
            return .wedged("\(what) is stopped")
        }
        let before = server?.activity
        let verdict = await voices(configuration, timeout: timeout, module: module)
        guard case .silent(let why) = verdict else { return verdict }
        if let server, let before, server.activity != before {
            return .answering
        }
        return .wedged(why)
    }

    fileprivate func voices(_ configuration: SpeechDispatcherSynthesizer.Configuration, timeout: Double,
                            module: String?) async -> SpeechdProbe.Verdict {
        let opened: SSIPSocket.Opened
        switch SpeechdConnector.open(address: configuration.address, spawnWithin: nil) {
        case .success(let socket): opened = socket
        case .failure(let error): return .wedged(SpeechdCore.reason(of: error))
        }
        return await converse(on: opened, timeout: timeout, ended: { .silent($0) }) { connection, done in
            connection.send(SpeechdConnector.clientNameCommand(client: configuration.clientName, component: "probe")) { _ in }
            if let module {
                connection.send(SSIPText.command("SET", "self", "OUTPUT_MODULE", module)) { _ in }
            }
            connection.send(SSIPText.command("LIST", "SYNTHESIS_VOICES"), inactivityTimeout: true) { result in
                switch result {
                case .success(let reply) where reply.isSuccess:
                    done(.answering)
                case .success(let reply):
                    done(.wedged("its voice list failed: \(reply.code) \(reply.text)"))
                case .failure(let error):
                    done(.silent(SpeechdCore.reason(of: error)))
                }
            }
        }
    }
}

import VoiceboxCore
import VoiceboxThreads

struct Services: Sendable {
    let speech: SpeechService
    let recognition: RecognitionService
}

/// The services, once they are ready: the object is exported before them (the services need
/// it to announce things), so a call that arrives first waits here for `open`.
final class ServicesGate: Sendable {
    private let state = Locked<(services: Services?, waiters: [CheckedContinuation<Services, Never>])>((nil, []))

    func open(_ services: Services) {
        let waiters = state.withLock { state in
            state.services = services
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: services) }
    }

    var services: Services {
        get async {
            if let ready = state.withLock({ $0.services }) { return ready }
            return await withCheckedContinuation { waiter in
                let ready: Services? = state.withLock { state in
                    if let services = state.services { return services }
                    state.waiters.append(waiter)
                    return nil
                }
                if let ready { waiter.resume(returning: ready) }
            }
        }
    }
}

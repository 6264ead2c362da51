@testable import TestSupport
import VoiceboxContract
import VoiceboxThreads
import XCTest
@testable import VoiceboxCore

/// The voice cache's policy with a scripted lister and a virtual clock.
final class VoiceCacheTests: XCTestCase {
    static let english = [Voice(id: "espeak-ng/English", name: "English", language: "en", variant: "none", engine: "espeak-ng")]
    static let more = english + [Voice(id: "espeak-ng/German", name: "German", language: "de", variant: "none", engine: "espeak-ng")]

    struct Failure: Error {}

    /// Answers from a script, one entry per call; the last entry repeats.
    final class ScriptedLister: Sendable {
        private let script: Locked<[Result<[Voice], Failure>]>
        let calls = Locked(0)
        init(_ script: [Result<[Voice], Failure>]) { self.script = Locked(script) }
        func list() throws -> [Voice] {
            calls.withLock { $0 += 1 }
            let next = script.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
            return try next.get()
        }
    }

    /// Records the backoff asked for and returns at once.
    final class Sleeps: Sendable {
        let asked = Locked<[Duration]>([])
        func sleep(_ duration: Duration) async throws {
            asked.withLock { $0.append(duration) }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    func testEmptyThenFailedThenGoodListing() async throws {
        let lister = ScriptedLister([.success([]), .failure(Failure()), .success(Self.english)])
        let sleeps = Sleeps()
        let changes = Locked<[[Voice]]>([])
        let cache = VoiceCache(lister: { try lister.list() }, sleep: { duration in
            // The waiter's own time limit must not fire in this test.
            if duration < .seconds(5) { try await sleeps.sleep(duration) } else { try await Task.sleep(for: .seconds(60)) }
        }, onChange: { list in changes.withLock { $0.append(list) } })
        let voices = try await cache.get()
        XCTAssertEqual(voices, Self.english)
        XCTAssertEqual(lister.calls.withLock { $0 }, 3)
        XCTAssertEqual(sleeps.asked.withLock { $0 }, [.milliseconds(250), .milliseconds(500)], "exponential backoff")
        XCTAssertEqual(changes.withLock { $0 }, [Self.english])
        let cached = await cache.current
        XCTAssertEqual(cached, Self.english)
        // Answered from memory now: no further listing.
        _ = try await cache.get()
        XCTAssertEqual(lister.calls.withLock { $0 }, 3)
    }

    /// The engine coming up while the first listing runs must not start a second one beside it
    /// (speech-dispatcher serves nobody while it writes one); during the backoff sleep it retries now.
    func testTheEngineComingUpStartsNoSecondListingBesideARunningOne() async throws {
        let started = Locked(0)
        let release = AsyncStream<Void>.makeStream()
        let cache = VoiceCache(lister: {
            started.withLock { $0 += 1 }
            for await _ in release.stream { break }
            return Self.english
        })
        await cache.refresh()
        try await waitUntil("the first listing to start") { started.withLock { $0 } == 1 }
        await cache.refreshUnlessListing()
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertEqual(started.withLock { $0 }, 1, "no second listing beside the first")
        release.continuation.yield()
        let voices = try await cache.get()
        XCTAssertEqual(voices, Self.english)

        let failing = ScriptedLister([.failure(Failure()), .success(Self.more)])
        let asleep = Locked(false)
        let backoff = VoiceCache(lister: { try failing.list() }, sleep: { _ in
            asleep.withLock { $0 = true }
            try await Task.sleep(for: .seconds(60))
        })
        await backoff.refresh()
        try await waitUntil("the first listing to fail and its backoff to begin") { asleep.withLock { $0 } }
        XCTAssertEqual(failing.calls.withLock { $0 }, 1)
        await backoff.refreshUnlessListing()  // asleep in its backoff: retried at once
        try await waitUntil("the listing again, at once") { failing.calls.withLock { $0 } == 2 }
    }

    /// Any caller may ask for any number of languages: the answers kept are bounded.
    func testRememberedAnswersAreBounded() async throws {
        let lister = ScriptedLister([.success(Self.more)])
        let cache = VoiceCache(lister: { try lister.list() })
        for index in 0..<500 { _ = try await cache.voices(for: "x-\(index)") }
        let kept = await cache.rememberedLanguages
        XCTAssertEqual(kept, VoiceCache.maximumMatches)
        let german = try await cache.voices(for: "de")
        XCTAssertEqual(german.map(\.id), ["espeak-ng/German"])
    }

    /// A Speak's voice for a language is VoiceMatching's best (the plain language when the region
    /// has none), taken from the remembered answers: the second Speak matches nothing again.
    func testTheBestVoiceForALanguageIsRemembered() async throws {
        let lister = ScriptedLister([.success(Self.more)])
        let cache = VoiceCache(lister: { try lister.list() })
        for language in ["de-AT", "EN", "en-NZ", "qq", "de-AT"] {
            let best = try await cache.best(for: language)
            XCTAssertEqual(best, VoiceMatching.best(Self.more, for: language), language)
        }
        let kept = await cache.rememberedLanguages
        XCTAssertEqual(kept, 5, "de-at, de, en, en-nz, qq")
    }

    func testBackoffIsBounded() async throws {
        let lister = ScriptedLister(Array(repeating: .success([]), count: 9) + [.success(Self.english)])
        let sleeps = Sleeps()
        var policy = VoiceCache.Policy()
        policy.maximumWait = .seconds(60)
        let cache = VoiceCache(policy: policy, lister: { try lister.list() }, sleep: { duration in
            if duration <= .seconds(10) { try await sleeps.sleep(duration) }
            else { try await Task.sleep(for: .seconds(60)) }
        })
        _ = try await cache.get()
        let asked = sleeps.asked.withLock { $0 }
        XCTAssertEqual(asked.max(), .seconds(10))
        XCTAssertEqual(asked.prefix(3), [.milliseconds(250), .milliseconds(500), .seconds(1)])
    }

    func testWaitersGiveUpWithEngineUnavailable() async throws {
        var policy = VoiceCache.Policy()
        policy.maximumWait = .milliseconds(200)
        let cache = VoiceCache(policy: policy, lister: { throw Failure() })
        do {
            _ = try await cache.get()
            XCTFail("no list can arrive")
        } catch {
            XCTAssertEqual(error.kind, .engineUnavailable)
            XCTAssertTrue(error.message.contains("listing voices failed"), error.message)
        }
        let cached = await cache.current
        XCTAssertNil(cached, "a failed listing is never cached")
    }

    // Backoffs pass at once; the wait for a first listing (10 s) does not (it once raced the listing
    // under ThreadSanitizer).
    func testRefreshKeepsTheOldListOnFailureAndSignalsOnlyRealChanges() async throws {
        let lister = ScriptedLister([.success(Self.english), .success(Self.english), .failure(Failure()), .success(Self.more)])
        let changes = Locked(0)
        let cache = VoiceCache(lister: { try lister.list() }, sleep: { duration in try await Task.sleep(for: duration < .seconds(5) ? .milliseconds(1) : .seconds(60)) },
                               onChange: { _ in changes.withLock { $0 += 1 } })
        _ = try await cache.get()
        XCTAssertEqual(changes.withLock { $0 }, 1)
        await cache.refresh()  // the same list: no change
        try await waitUntil("the second listing") { lister.calls.withLock { $0 } == 2 }
        try await Task.sleep(for: .milliseconds(20))
        XCTAssertEqual(changes.withLock { $0 }, 1)
        await cache.refresh()  // fails, then lists more voices
        try await waitUntil("the second change") { changes.withLock { $0 } == 2 }
        let voices = try await cache.get()
        XCTAssertEqual(voices, Self.more)
    }

    /// A refresh that finds the same voices keeps the list it has, not the fresh copy: memory laid
    /// out at start-up stays where it is.
    func testTheSameVoicesAgainKeepTheListAlreadyHeld() async throws {
        let calls = Locked(0)
        // A new array (and new strings) on every call, as a real listing makes.
        let cache = VoiceCache(lister: { calls.withLock { $0 += 1 }; return Self.more.map { Voice(id: $0.id + "", name: $0.name, language: $0.language, variant: $0.variant, engine: $0.engine) } },
                               sleep: { duration in try await Task.sleep(for: duration < .seconds(5) ? .milliseconds(1) : .seconds(60)) })
        let first = try await cache.get()
        let address = { (voices: [Voice]) in voices.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        await cache.refresh()
        try await waitUntil("the second listing") { calls.withLock { $0 } == 2 }
        try await Task.sleep(for: .milliseconds(20))
        let after = try await cache.get()
        XCTAssertEqual(after, first)
        XCTAssertEqual(address(after), address(first), "the refreshed copy replaced the list held")
    }
}

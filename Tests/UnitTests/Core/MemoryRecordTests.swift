@testable import TestSupport
@testable import VoiceboxCore
import VoiceboxContract
import XCTest

/// How a waiting record tells what an entry or its stream shows: what it kept, a change of ours
/// (to within WirePlumber's rounding), or the user's setting since.
final class MemoryRecordTests: XCTestCase {
    let entry = "sink-input-by-application-name:totem"

    func setting(_ volume: [UInt32]?, muted: Bool = false, device: String? = nil) -> RememberedSetting {
        RememberedSetting(name: entry, muted: muted, volume: volume, channelMap: volume?.count == 1 ? [0] : [1, 2], device: device)
    }

    /// The user's stereo 20000, ducked once to 11247.
    var record: MemoryRecord { MemoryRecord(name: entry, before: setting([20000, 20000]), levels: [[11247, 11247]], original: [20000, 20000]) }

    func testWhatItKeptAndOurDuckAreAccountedFor() {
        XCTAssertTrue(record.accounts(for: setting([20000, 20000])))
        XCTAssertTrue(record.accounts(for: setting([11247, 11247])))
        XCTAssertTrue(record.accounts(for: setting([11248, 11247])), "WirePlumber's rounding")
    }

    func testAnotherLevelMuteOrDeviceIsTheUsers() {
        XCTAssertFalse(record.accounts(for: setting([50000, 50000])))
        XCTAssertFalse(record.accounts(for: setting([11250, 11250])))
        XCTAssertFalse(record.accounts(for: setting([20000, 20000], muted: true)), "a mute we never set")
        XCTAssertFalse(record.accounts(for: setting([20000, 20000], device: "headphones")))
        XCTAssertFalse(record.accounts(for: nil), "the entry was deleted")
    }

    /// A mono stream of a stereo entry is compared by its loudest channel.
    func testAnotherChannelCountIsComparedByItsLoudestChannel() {
        XCTAssertTrue(record.accounts(for: setting([20000])))
        XCTAssertTrue(record.accounts(for: setting([11247])))
        XCTAssertFalse(record.accounts(for: setting([30000])))
    }

    /// An entry that did not exist: a blank one, or one showing our change, is still ours.
    func testAnEntryThatDidNotExist() {
        let absent = MemoryRecord(name: entry, before: nil, levels: [[11247, 11247]])
        XCTAssertTrue(absent.accounts(for: nil))
        XCTAssertTrue(absent.accounts(for: setting(nil)))
        XCTAssertTrue(absent.accounts(for: setting([11247, 11247])))
        XCTAssertFalse(absent.accounts(for: setting([40000, 40000])))
    }

    /// WirePlumber keeps 6-decimal linear floats: 2249 (a quiet duck) came back 2241 here; at
    /// ordinary levels only the last step may differ.
    func testRoundingIsToleratedAsWirePlumberRounds() {
        XCTAssertTrue(MemoryRecord.isAlike([2249], [2241]))
        XCTAssertFalse(MemoryRecord.isAlike([2249], [2270]))
        XCTAssertTrue(MemoryRecord.isAlike([30000], [30001]))
        XCTAssertFalse(MemoryRecord.isAlike([30000], [30003]))
        XCTAssertFalse(MemoryRecord.isAlike([30000, 30000], [30000]))
    }

    /// Near 0 the rounding is at most cbrt(5e-7) of the scale (about 520), not every level.
    func testALevelOfZeroIsNotAlikeToEveryLevel() {
        XCTAssertTrue(MemoryRecord.isAlike([0, 0], [300, 300]))
        XCTAssertFalse(MemoryRecord.isAlike([0, 0], [50000, 50000]))
        let silent = MemoryRecord(name: entry, before: setting([0, 0]), levels: [[0, 0]])
        XCTAssertFalse(silent.accounts(for: setting([50000, 50000])))
        XCTAssertFalse(silent.isInherited(volume: PlaybackStream(id: 1, applicationName: "totem", volume: [50000, 50000])))
    }
}

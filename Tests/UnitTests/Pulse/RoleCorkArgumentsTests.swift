@testable import TestSupport
import XCTest
@testable import VoiceboxPulse

/// module-role-cork's argument string, as `pactl list modules` shows it.
final class RoleCorkArgumentsTests: XCTestCase {
    func testNoArgumentsMeanTheModuleDefaults() {
        for argument in [nil, "", "   "] {
            let parsed = RoleCorkArguments(parsing: argument)
            XCTAssertEqual(parsed.triggerRoles, ["phone"])
            XCTAssertEqual(parsed.corkRoles, ["music", "video"])
            XCTAssertFalse(parsed.global)
        }
    }

    func testOnlyTheGivenListReplacesItsDefault() {
        let parsed = RoleCorkArguments(parsing: "trigger_roles=a11y")
        XCTAssertEqual(parsed.triggerRoles, ["a11y"])
        XCTAssertEqual(parsed.corkRoles, ["music", "video"])
    }

    func testSeveralRolesAndGlobal() {
        let parsed = RoleCorkArguments(parsing: "trigger_roles=phone,a11y cork_roles=music,video,game global=true")
        XCTAssertEqual(parsed, RoleCorkArguments(triggerRoles: ["phone", "a11y"], corkRoles: ["music", "video", "game"], global: true))
    }

    func testQuotedValues() {
        let parsed = RoleCorkArguments(parsing: #"trigger_roles="phone, a11y" cork_roles='music,video' global="no""#)
        XCTAssertEqual(parsed, RoleCorkArguments(triggerRoles: ["phone", "a11y"], corkRoles: ["music", "video"], global: false))
    }

    func testEscapesBlanksAndOrderDoNotMatter() {
        let parsed = RoleCorkArguments(parsing: #"  global=1   cork_roles=music\ box,,video  trigger_roles=phone  "#)
        XCTAssertEqual(parsed, RoleCorkArguments(triggerRoles: ["phone"], corkRoles: ["music box", "video"], global: true))
    }

    func testEmptyListCorksNothingAndUnknownKeysAreIgnored() {
        let parsed = RoleCorkArguments(parsing: #"cork_roles="" foo=bar baz trigger_roles=phone"#)
        XCTAssertEqual(parsed.corkRoles, [])
        XCTAssertEqual(parsed.triggerRoles, ["phone"])
    }

    func testUnterminatedQuoteTakesTheRest() {
        XCTAssertEqual(RoleCorkArguments(parsing: #"trigger_roles="phone,a11y"#).triggerRoles, ["phone", "a11y"])
    }

    func testBooleanWords() {
        for word in ["1", "yes", "Y", "true", "on", "t"] { XCTAssertEqual(RoleCorkArguments.boolean(word), true, word) }
        for word in ["0", "no", "N", "false", "off", "f"] { XCTAssertEqual(RoleCorkArguments.boolean(word), false, word) }
        XCTAssertNil(RoleCorkArguments.boolean("maybe"))
    }
}

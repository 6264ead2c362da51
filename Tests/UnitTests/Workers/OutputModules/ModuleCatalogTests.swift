import XCTest
@testable import VoiceboxWorkers

/// Which program and configuration each module name stands for, as speech-dispatcher reads its files.
final class ModuleCatalogTests: XCTestCase {
    private func catalog(_ conf: String, files: [String: String] = [:], programs: [String] = [], locale: String? = nil) -> ModuleCatalog {
        ModuleCatalog(speechdConf: conf, moduleFiles: ["/user/modules", "/etc/speech-dispatcher/modules"],
                      programDirectory: "/usr/lib/speech-dispatcher-modules", locale: locale,
                      read: { files[$0] }, list: { $0 == "/usr/lib/speech-dispatcher-modules" ? programs : [] })
    }

    func testAddModuleLinesNameTheModulesTheUsersFileFirst() {
        let conf = """
            # AddModule "festival" "sd_festival" "festival.conf"
            AddModule "espeak-ng"    "sd_espeak-ng" "espeak-ng.conf"
            AddModule "mine" "/opt/sd_mine"   # no file
            DefaultModule espeak-ng
            DefaultLanguage "de"
            """
        let found = catalog(conf, files: ["/user/modules/espeak-ng.conf": "EspeakNormalRate 160\n",
                                          "/etc/speech-dispatcher/modules/espeak-ng.conf": ""])
        XCTAssertEqual(found.modules.keys.sorted(), ["espeak-ng", "mine"])
        XCTAssertEqual(found.modules["espeak-ng"]?.program, "/usr/lib/speech-dispatcher-modules/sd_espeak-ng")
        XCTAssertEqual(found.modules["espeak-ng"]?.configuration, "/user/modules/espeak-ng.conf")
        XCTAssertEqual(found.modules["espeak-ng"]?.rateScale, .espeak(minimum: 80, normal: 160, maximum: 449))
        XCTAssertEqual(found.modules["mine"]?.program, "/opt/sd_mine")
        XCTAssertNil(found.modules["mine"]?.configuration)
        XCTAssertEqual(found.modules["mine"]?.rateScale, .logarithmic)
        XCTAssertEqual(found.defaultModule, "espeak-ng")
        XCTAssertEqual(found.defaultLanguage, "de")
    }

    func testWithoutAddModuleEveryProgramButGenericIsOne() {
        let found = catalog("", files: ["/etc/speech-dispatcher/modules/espeak-ng.conf": ""],
                            programs: ["sd_espeak-ng", "sd_generic", "sd_dummy", "README"], locale: "fr_CA.UTF-8")
        XCTAssertEqual(found.modules.keys.sorted(), ["dummy", "espeak-ng"])
        XCTAssertEqual(found.modules["espeak-ng"]?.configuration, "/etc/speech-dispatcher/modules/espeak-ng.conf")
        XCTAssertEqual(found.defaultModule, "espeak-ng")
        XCTAssertEqual(found.defaultLanguage, "fr-CA")
        XCTAssertEqual(catalog("", locale: "C.UTF-8").defaultLanguage, "en")
    }

    /// A rate factor as espeak-ng's own: 1 is espeak-ng's 175 words a minute (what espeak-ng -w
    /// speaks; speech-dispatcher's normal is 170), 2 is 350, and the module's bounds hold.
    func testRateFactorsAreFactorsOfEspeakNgsOwnSpeed() {
        let espeak = ModuleCatalog.RateScale.espeak(minimum: 80, normal: 170, maximum: 449)
        XCTAssertEqual(espeak.moduleRate(1), 2)       // sd_espeak-ng: 170 + 279 * 2 / 100 = 175
        XCTAssertEqual(espeak.moduleRate(2), 65)      // 170 + 279 * 65 / 100 = 351
        XCTAssertEqual(espeak.moduleRate(0.5), -92)   // 170 - 90 * 92 / 100 = 88
        XCTAssertEqual(espeak.moduleRate(10), 100)
        XCTAssertEqual(espeak.moduleRate(0.1), -100)
        XCTAssertEqual(ModuleCatalog.RateScale.logarithmic.moduleRate(2), 50)
        XCTAssertEqual(ModuleCatalog.RateScale.logarithmic.moduleRate(.nan), -100)
    }
}

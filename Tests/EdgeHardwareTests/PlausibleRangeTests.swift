import Testing

@testable import EdgeHardware

@Suite struct PlausibleRangeTests {
    let range = PlausibleRange(.pressure, 300...1100)

    @Test func valuesInsideIncludingTheEndsAreMeasurements() throws {
        #expect(try range.measurement(300) == Measurement(.pressure, 300))
        #expect(try range.measurement(1013.25) == Measurement(.pressure, 1013.25))
        #expect(try range.measurement(1100) == Measurement(.pressure, 1100))
    }

    @Test(arguments: [299.999, 1100.001, -.infinity, .infinity, .nan])
    func valuesOutsideAreImplausibleReadings(value: Double) {
        #expect(throws: SensorError.self) { try range.measurement(value) }
    }

    @Test(arguments: [
        (9223372036854775.807, "9223372036854776"), (-274.0, "-274"), (1100.0235188898673, "1100.024"),
        (-44.00129, "-44.001"), (130.0000001, "130"), (0.5, "0.5"), (-0.0, "0"), (1e300, "1e+300"),
    ])
    func messagesShowAtMostThreeDecimalsAndNoExponentForWholeNumbers(value: Double, shown: String) {
        #expect(PlausibleRange.format(value) == shown)
    }

    @Test func messageNamesTheReadingTheUnitAndTheRange() {
        let error = SensorError.implausibleReading(Measurement(.pressure, 1150.0108), range: range)
        #expect(error.description == "implausible reading 1150.011 hPa (range 300...1100)")
        #expect(PlausibleRange(.humidity, 0...100).description == "0...100")
        #expect(PlausibleRange(.temperature, -40.5...85).description == "-40.5...85")
    }
}

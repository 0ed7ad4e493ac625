import CoatyJSON

extension DeviceConfiguration {
    /// Reads and validates the value of the configuration's `devices` member, found in `file`.
    public init(parsing devices: JSONCursor, file: String) throws(ConfigurationError) {
        var parser = DevicesParser()
        do {
            self = try parser.configuration(devices)
        } catch {
            throw ConfigurationError(file: file, path: error.path, reason: error.reason)
        }
    }

    /// Checks that every source and actor named here is an IoSource or IoActor of the configuration
    /// (`common.ioContextNodes`), given their objectIds.
    public func checkReferences(ioSourceIds: Set<String>, ioActorIds: Set<String>, file: String)
        throws(ConfigurationError)
    {
        func check(
            _ id: String, at path: JSONPath, against ids: Set<String>, kind: String, other: Set<String>,
            otherKind: String
        )
            throws(ConfigurationError)
        {
            guard !ids.contains(id) else { return }
            let reason =
                other.contains(id)
                ? "\"\(id)\" is an \(otherKind), not an \(kind)"
                : "no \(kind) with objectId \"\(id)\" in common.ioContextNodes"
            throw ConfigurationError(file: file, path: path, reason: reason)
        }
        for source in sensors.flatMap(\.sources) {
            try check(
                source.ioSourceId, at: source.path.appending("ioSource"), against: ioSourceIds,
                kind: "IoSource", other: ioActorIds, otherKind: "IoActor")
        }
        for input in inputs {
            try check(
                input.ioSourceId, at: input.path.appending("ioSource"), against: ioSourceIds,
                kind: "IoSource", other: ioActorIds, otherKind: "IoActor")
        }
        for output in outputs {
            try check(
                output.ioActorId, at: output.path.appending("ioActor"), against: ioActorIds,
                kind: "IoActor", other: ioSourceIds, otherKind: "IoSource")
        }
        for output in pwmOutputs {
            try check(
                output.ioActorId, at: output.path.appending("ioActor"), against: ioActorIds,
                kind: "IoActor", other: ioSourceIds, otherKind: "IoSource")
            if let duty = output.dutySourceId {
                try check(
                    duty, at: output.path.appending("dutySource"), against: ioSourceIds,
                    kind: "IoSource", other: ioActorIds, otherKind: "IoActor")
            }
        }
        for counter in counters {
            for (member, id) in [
                ("total", counter.totalSourceId), ("rate", counter.rateSourceId),
                ("quantity", counter.quantitySourceId),
            ] {
                guard let id else { continue }
                try check(
                    id, at: counter.path.appending(member).appending("ioSource"), against: ioSourceIds,
                    kind: "IoSource", other: ioActorIds, otherKind: "IoActor")
            }
        }
    }
}

/// Reads the `devices` section and remembers what is taken (addresses, lines, sources, actors), so that a
/// second use points at the first.
private struct DevicesParser {
    struct I2CDevice: Hashable {
        var bus: String
        var address: UInt8
    }

    var i2cDevices: [I2CDevice: JSONPath] = [:]
    var oneWireDevices: [String: JSONPath] = [:]
    var thermalZones: [Int: JSONPath] = [:]
    var lines: [GPIOLineAddress: JSONPath] = [:]
    var pwmChannels: [String: JSONPath] = [:]
    var stateFiles: [String: JSONPath] = [:]
    var ioSources: [String: JSONPath] = [:]
    var ioActors: [String: JSONPath] = [:]

    static let defaultPollInterval = Duration.seconds(10)
    static let shortestPollInterval = Duration.milliseconds(100)
    /// A DS18B20 takes up to 750 ms per conversion at 12 bits.
    static let shortestOneWirePollInterval = Duration.seconds(1)
    static let defaultRetry = Backoff(minimum: .seconds(1), maximum: .seconds(300))

    mutating func configuration(_ devices: JSONCursor) throws(JSONShapeError) -> DeviceConfiguration {
        try devices.allowOnly(["emulated", "sysfsRoot", "sensors", "outputs", "inputs"])
        var configuration = DeviceConfiguration()
        configuration.emulated = try devices.optional("emulated")?.bool() ?? false
        if let root = try devices.optional("sysfsRoot") {
            configuration.sysfsRoot = try root.nonEmptyString()
            guard configuration.sysfsRoot.hasPrefix("/") else { throw root.error("must be an absolute path") }
        }
        for entry in try devices.optional("sensors")?.elements() ?? [] {
            configuration.sensors.append(try sensor(entry))
        }
        for entry in try devices.optional("outputs")?.elements() ?? [] {
            if try entry.required("driver").oneOf(["gpio-output", "pwm-output"]) == "pwm-output" {
                configuration.pwmOutputs.append(try pwmOutput(entry))
            } else {
                configuration.outputs.append(try output(entry))
            }
        }
        for entry in try devices.optional("inputs")?.elements() ?? [] {
            if try entry.required("driver").oneOf(["gpio-input", "pulse-counter"]) == "pulse-counter" {
                configuration.counters.append(try counter(entry))
            } else {
                configuration.inputs.append(try input(entry))
            }
        }
        return configuration
    }

    // MARK: Sensors

    mutating func sensor(_ entry: JSONCursor) throws(JSONShapeError) -> SensorDevice {
        let driver: SensorDriver = try choice(entry.required("driver"))
        var members: Set = ["driver", "pollInterval", "retry", "sources"]
        switch driver {
        case .ds18b20: members.insert("oneWireId")
        case .thermal: members.insert("zone")
        default: members.formUnion(["bus", "address"])
        }
        try entry.allowOnly(members)

        let connection: SensorConnection
        var shortestInterval = Self.shortestPollInterval
        switch driver {
        case .ds18b20:
            let id = try entry.required("oneWireId")
            let deviceId = try id.string()
            guard DS18B20.isDeviceId(deviceId) else {
                throw id.error("\"\(deviceId)\" is not a DS18B20 id like \"28-0316a2795cff\"")
            }
            try claim(deviceId, in: &oneWireDevices, by: entry.path, at: id, "1-Wire device \(deviceId)")
            connection = .oneWire(deviceId: deviceId)
            shortestInterval = Self.shortestOneWirePollInterval
        case .thermal:
            let zoneCursor = try entry.required("zone")
            let zone = try zoneCursor.integer(in: 0...1023)
            try claim(zone, in: &thermalZones, by: entry.path, at: zoneCursor, "thermal zone \(zone)")
            connection = .thermalZone(zone)
        default:
            let bus = try i2cBus(entry.required("bus"))
            let addressCursor = try entry.required("address")
            let address = try i2cAddress(addressCursor)
            if let allowed = driver.i2cAddresses, !allowed.contains(address) {
                let choices =
                    allowed.count == 2
                    ? "\(hex(allowed.lowerBound)) or \(hex(allowed.upperBound))"
                    : "\(hex(allowed.lowerBound))...\(hex(allowed.upperBound))"
                throw addressCursor.error("\(hex(address)) is not an address of the \(driver.rawValue) (\(choices))")
            }
            try claim(
                I2CDevice(bus: bus, address: address), in: &i2cDevices, by: entry.path, at: addressCursor,
                "address \(hex(address)) on \(bus)")
            connection = .i2c(bus: bus, address: address)
        }

        var pollInterval = Self.defaultPollInterval
        if let interval = try entry.optional("pollInterval") {
            pollInterval = try Duration(parsing: interval)
            guard pollInterval >= shortestInterval else {
                throw interval.error("must be at least \(shortestInterval.configurationText) for a \(driver.rawValue)")
            }
        }
        let retry =
            try entry.optional("retry").map { (cursor) throws(JSONShapeError) in try backoff(cursor) }
            ?? Self.defaultRetry
        let sources = try sources(entry.required("sources"), of: driver)
        return SensorDevice(
            driver: driver, connection: connection, pollInterval: pollInterval, retry: retry, sources: sources,
            path: entry.path)
    }

    mutating func sources(_ cursor: JSONCursor, of driver: SensorDriver) throws(JSONShapeError) -> [SourceBinding] {
        let quantities = driver.quantities.map(\.rawValue)
        try cursor.allowOnly(Set(quantities))
        var bindings: [SourceBinding] = []
        for quantity in driver.quantities {
            guard let binding = try cursor.optional(quantity.rawValue) else { continue }
            try binding.allowOnly(["ioSource", "filters"])
            let filters = try binding.optional("filters")?.elements().map { (filter) throws(JSONShapeError) in
                try self.filter(filter)
            }
            bindings.append(
                SourceBinding(
                    quantity: quantity, ioSourceId: try ioSource(binding), filters: filters ?? [], path: binding.path))
        }
        guard !bindings.isEmpty else {
            throw cursor.error(
                "must bind at least one of \(quantities.map { "\"\($0)\"" }.joined(separator: ", ")) to an IoSource")
        }
        return bindings
    }

    func i2cBus(_ cursor: JSONCursor) throws(JSONShapeError) -> String {
        if case .number = cursor.value {
            return "/dev/i2c-\(try cursor.integer(in: 0...1023))"
        }
        guard case .string(let path) = cursor.value else {
            throw cursor.error(
                "expected a bus number or a device path like \"/dev/i2c-1\", found \(cursor.value.typeName)")
        }
        guard path.hasPrefix("/dev/") && path.count > 5 else {
            throw cursor.error("\"\(path)\" is not a device path like \"/dev/i2c-1\"")
        }
        return path
    }

    /// A 7-bit address, written as a number (118) or a hex string ("0x76").
    func i2cAddress(_ cursor: JSONCursor) throws(JSONShapeError) -> UInt8 {
        switch cursor.value {
        case .number:
            return UInt8(try cursor.integer(in: 0...0x7F))
        case .string(let text):
            let digits = text.dropFirst(2)
            guard text.lowercased().hasPrefix("0x"), (1...2).contains(digits.count),
                let address = UInt8(digits, radix: 16)
            else {
                throw cursor.error("\"\(text)\" is not an I2C address like \"0x48\"")
            }
            guard address <= 0x7F else { throw cursor.error("\(hex(address)) is out of the 7-bit range 0x00...0x7F") }
            return address
        default:
            throw cursor.error(
                "expected an I2C address, a number or a string like \"0x48\", found \(cursor.value.typeName)")
        }
    }

    func hex(_ address: UInt8) -> String {
        let digits = String(address, radix: 16, uppercase: true)
        return "0x" + (digits.count == 1 ? "0" + digits : digits)
    }

    func backoff(_ cursor: JSONCursor) throws(JSONShapeError) -> Backoff {
        try cursor.allowOnly(["min", "max"])
        var minimum = Self.defaultRetry.minimum
        if let min = try cursor.optional("min") {
            minimum = try Duration(parsing: min)
            guard minimum > .zero else { throw min.error("must be longer than zero") }
        }
        var maximum = max(Self.defaultRetry.maximum, minimum)
        if let max = try cursor.optional("max") {
            maximum = try Duration(parsing: max)
            guard maximum >= minimum else {
                throw max.error("must not be shorter than min, \(minimum.configurationText)")
            }
        }
        return Backoff(minimum: minimum, maximum: maximum)
    }

    // MARK: Filters

    static let filterNames = [
        "offset", "linear", "calibrate", "clamp", "deadband", "movingAverage", "round", "heartbeat",
    ]

    func filter(_ cursor: JSONCursor) throws(JSONShapeError) -> ValueFilter {
        let known = Self.filterNames.map { "\"\($0)\"" }.joined(separator: ", ")
        let members = try cursor.members()
        guard members.count == 1, let (name, argument) = members.first else {
            throw cursor.error("a filter is an object with one member, the filter's name (\(known))")
        }
        switch name {
        case "offset":
            return .calibrate(LinearCalibration(offset: try argument.number()))
        case "linear":
            try argument.allowOnly(["slope", "offset"])
            let slope = try argument.required("slope").number()
            let offset = try argument.optional("offset")?.number() ?? 0
            return .calibrate(LinearCalibration(slope: slope, offset: offset))
        case "calibrate":
            let points = try argument.elements()
            guard points.count == 2 else {
                throw argument.error(
                    "needs two reference points, {\"measured\": ..., \"actual\": ...}, found \(points.count)")
            }
            var pairs: [(measured: Double, actual: Double)] = []
            for point in points {
                try point.allowOnly(["measured", "actual"])
                pairs.append((try point.required("measured").number(), try point.required("actual").number()))
            }
            guard
                let calibration = LinearCalibration(
                    measured: pairs[0].measured, actual: pairs[0].actual, measured: pairs[1].measured,
                    actual: pairs[1].actual)
            else {
                throw JSONShapeError(
                    path: points[1].path.appending("measured"),
                    reason: "must differ from the first point's measured value")
            }
            return .calibrate(calibration)
        case "clamp":
            try argument.allowOnly(["min", "max", "outside"])
            let lower = try argument.optional("min")?.number()
            let upper = try argument.optional("max")?.number()
            guard lower != nil || upper != nil else { throw argument.error("needs \"min\", \"max\" or both") }
            if let lower, let upper, lower > upper, let max = try argument.optional("max") {
                throw max.error("must not be below min, \(JSONValue.number(lower))")
            }
            let outside: Clamp.Outside =
                try argument.optional("outside").map { (cursor) throws(JSONShapeError) in
                    try choice(cursor)
                } ?? .clamp
            return .clamp(Clamp(lower: lower ?? -.infinity, upper: upper ?? .infinity, outside: outside))
        case "deadband":
            let threshold = try argument.number()
            guard threshold > 0 else { throw argument.error("must be above zero") }
            return .deadband(Deadband(threshold: threshold))
        case "movingAverage":
            return .movingAverage(MovingAverage(window: try argument.integer(in: 1...1000)))
        case "round":
            return .round(Rounding(digits: try argument.integer(in: 0...15)))
        case "heartbeat":
            let period = try Duration(parsing: argument)
            guard period > .zero else { throw argument.error("must be longer than zero") }
            return .heartbeat(Heartbeat(period: period))
        default:
            throw argument.error("unknown filter \"\(name)\" (known: \(known))")
        }
    }

    // MARK: GPIO

    mutating func output(_ entry: JSONCursor) throws(JSONShapeError) -> OutputDevice {
        try entry.allowOnly([
            "driver", "ioActor", "chip", "line", "activeLow", "initial", "safeState", "hysteresis", "pulse",
            "minOnTime",
            "minOffTime",
        ])
        let actorCursor = try entry.required("ioActor")
        let ioActorId = try actorCursor.nonEmptyString()
        try claim(ioActorId, in: &ioActors, by: entry.path, at: actorCursor, "IoActor \"\(ioActorId)\"")
        let line = try line(entry)
        let activeLow = try entry.optional("activeLow")?.bool() ?? false
        let initial = try entry.optional("initial")?.oneOf(["on", "off"]) ?? "off"
        let safeState: SafeState =
            try entry.optional("safeState").map { (cursor) throws(JSONShapeError) in
                try choice(cursor)
            } ?? .off
        var control =
            try entry.optional("hysteresis").map { (cursor) throws(JSONShapeError) in try hysteresis(cursor) }
            ?? .switching
        if let pulseCursor = try entry.optional("pulse") {
            guard case .switching = control else {
                throw pulseCursor.error("a pulse output cannot have a hysteresis too")
            }
            control = .pulse(try pulse(pulseCursor))
        }
        let limits = SwitchingLimits(
            minimumOn: try entry.optional("minOnTime").map { (cursor) throws(JSONShapeError) in
                try Duration(parsing: cursor)
            } ?? .zero,
            minimumOff: try entry.optional("minOffTime").map { (cursor) throws(JSONShapeError) in
                try Duration(parsing: cursor)
            } ?? .zero)
        return OutputDevice(
            ioActorId: ioActorId, line: line, activeLow: activeLow, initial: initial == "on", safeState: safeState,
            control: control, limits: limits, path: entry.path)
    }

    /// Thresholds are numbers, or `{"shared": "<object>.<key>", "default": number}` for a value of a shared object.
    func hysteresis(_ cursor: JSONCursor) throws(JSONShapeError) -> OutputControl {
        try cursor.allowOnly(["onAbove", "offBelow", "onBelow", "offAbove"])
        let object = try cursor.object()
        let fan = object.contains(key: "onAbove") || object.contains(key: "offBelow")
        let heater = object.contains(key: "onBelow") || object.contains(key: "offAbove")
        let pairs =
            "\"onAbove\" with \"offBelow\" (on when hot, like a fan) or \"onBelow\" with \"offAbove\" (on when cold, like a heater)"
        guard fan != heater else {
            throw cursor.error(fan ? "mixes two kinds of thresholds: use \(pairs)" : "needs \(pairs)")
        }
        let (onKey, offKey) = fan ? ("onAbove", "offBelow") : ("onBelow", "offAbove")
        let offCursor = try cursor.required(offKey)
        let shared = SharedHysteresis(
            on: try threshold(try cursor.required(onKey)), off: try threshold(offCursor), onWhenHigh: fan)
        // Fixed thresholds (and the defaults of shared ones) must leave a band now; shared values are checked as they come.
        if let (on, off) = shared.thresholds([:]), shared.hysteresis(on: on, off: off) == nil {
            let relation = fan ? "below" : "above"
            throw offCursor.error("must be \(relation) \(onKey), \(JSONValue.number(on)), to leave a band between them")
        }
        guard shared.sharedObjectNames.isEmpty, let fixed = shared.hysteresis([:]) else {
            return .sharedHysteresis(shared)
        }
        return .hysteresis(fixed)
    }

    private func threshold(_ cursor: JSONCursor) throws(JSONShapeError) -> SharedHysteresis.Threshold {
        guard case .object = cursor.value else { return .fixed(try cursor.number()) }
        try cursor.allowOnly(["shared", "default"])
        let (name, key) = try sharedReference(cursor.required("shared"), example: "setpoints.fanOn")
        return .shared(object: name, key: key, fallback: try cursor.optional("default")?.number())
    }

    /// `"<shared object>.<key>"`.
    func sharedReference(_ reference: JSONCursor, example: String) throws(JSONShapeError) -> (
        object: String, key: String
    ) {
        let text = try reference.nonEmptyString()
        guard let dot = text.firstIndex(of: "."), dot != text.startIndex, text.index(after: dot) != text.endIndex else {
            throw reference.error("\"\(text)\" is not <shared object>.<key>, such as \"\(example)\"")
        }
        let name = String(text[..<dot])
        guard !name.contains(where: { $0 == "+" || $0 == "#" || $0 == "/" || $0 == "\0" }) else {
            throw reference.error("\"\(name)\" is not a shared object name: no '+', '#' or '/'")
        }
        return (name, String(text[text.index(after: dot)...]))
    }

    /// `"2s"`, or `{"duration": "2s", "maximum": "1min", "retrigger": "restart"|"extend"}`.
    func pulse(_ cursor: JSONCursor) throws(JSONShapeError) -> PulseSettings {
        func positive(_ cursor: JSONCursor) throws(JSONShapeError) -> Duration {
            let duration = try Duration(parsing: cursor)
            guard duration > .zero else { throw cursor.error("must be longer than zero") }
            return duration
        }
        guard case .object = cursor.value else { return PulseSettings(duration: try positive(cursor)) }
        try cursor.allowOnly(["duration", "maximum", "retrigger"])
        let duration = try positive(cursor.required("duration"))
        var maximum: Duration?
        if let maximumCursor = try cursor.optional("maximum") {
            maximum = try positive(maximumCursor)
            if let maximum, maximum < duration {
                throw maximumCursor.error("must not be shorter than the duration, \(duration.configurationText)")
            }
        }
        let retrigger: PulseSettings.Retrigger =
            try cursor.optional("retrigger").map { (cursor) throws(JSONShapeError) in
                try choice(cursor)
            } ?? .restart
        return PulseSettings(duration: duration, maximum: maximum, retrigger: retrigger)
    }

    // MARK: PWM

    mutating func pwmOutput(_ entry: JSONCursor) throws(JSONShapeError) -> PWMOutputDevice {
        try entry.allowOnly([
            "driver", "ioActor", "chip", "channel", "frequency", "minDuty", "maxDuty", "stopBelow", "kickStart",
            "inverted",
            "initialDuty", "safeDuty", "slewRate", "curve", "dutySource",
        ])
        let actorCursor = try entry.required("ioActor")
        let ioActorId = try actorCursor.nonEmptyString()
        try claim(ioActorId, in: &ioActors, by: entry.path, at: actorCursor, "IoActor \"\(ioActorId)\"")
        let chipCursor = try entry.required("chip")
        let chip: String
        if case .number = chipCursor.value {
            chip = "pwmchip\(try chipCursor.integer(in: 0...255))"
        } else {
            chip = try chipCursor.nonEmptyString()
            guard chip.hasPrefix("pwmchip"), Int(chip.dropFirst(7)) != nil else {
                throw chipCursor.error(
                    "\"\(chip)\" is not a PWM chip like \"pwmchip0\" (a directory of /sys/class/pwm)")
            }
        }
        let channelCursor = try entry.required("channel")
        let channel = try channelCursor.integer(in: 0...1023)
        try claim(
            "\(chip)/\(channel)", in: &pwmChannels, by: entry.path, at: channelCursor,
            "PWM channel \(channel) of \(chip)")

        func percent(_ key: String, default value: Double) throws(JSONShapeError) -> Double {
            guard let cursor = try entry.optional(key) else { return value }
            let number = try cursor.number()
            guard (0...100).contains(number) else { throw cursor.error("must be a percentage, 0...100") }
            return number
        }
        var settings = PWMSettings()
        if let frequency = try entry.optional("frequency") {
            settings.frequency = try frequency.number()
            // The period is written in whole nanoseconds.
            guard settings.frequency >= 0.01, settings.frequency <= 100_000_000 else {
                throw frequency.error("must be in 0.01...100000000 Hz")
            }
        }
        settings.range = DutyRange(
            minimum: try percent("minDuty", default: 0), maximum: try percent("maxDuty", default: 100),
            stopBelow: try percent("stopBelow", default: 0))
        if settings.range.minimum > settings.range.maximum, let maxCursor = try entry.optional("maxDuty") {
            throw maxCursor.error("must not be below minDuty, \(JSONValue.number(settings.range.minimum))")
        }
        settings.inverted = try entry.optional("inverted")?.bool() ?? false
        settings.initialDuty = try percent("initialDuty", default: 0)
        if let safe = try entry.optional("safeDuty"), case .string = safe.value {
            _ = try safe.oneOf(["keep"])
            settings.safeDuty = nil
        } else {
            settings.safeDuty = try percent("safeDuty", default: 100)
        }
        if let kick = try entry.optional("kickStart") {
            try kick.allowOnly(["duty", "time"])
            let time = try kick.required("time")
            let duration = try Duration(parsing: time)
            guard duration > .zero, duration <= .seconds(10) else {
                throw time.error("must be longer than zero and at most 10s")
            }
            var duty = 100.0
            if let dutyCursor = try kick.optional("duty") {
                duty = try dutyCursor.number()
                guard duty > 0, duty <= 100 else { throw dutyCursor.error("must be a percentage above 0, at most 100") }
            }
            settings.kickStart = KickStart(duty: duty, duration: duration)
        }
        if let slew = try entry.optional("slewRate") {
            let rate = try slew.number()
            guard rate > 0, rate.isFinite else { throw slew.error("must be above zero (percent per second)") }
            settings.slewRate = rate
        }
        let control =
            try entry.optional("curve").map { (cursor) throws(JSONShapeError) in try curve(cursor) } ?? .direct
        let dutySourceId = try entry.optional("dutySource").map { (cursor) throws(JSONShapeError) -> String in
            let id = try cursor.nonEmptyString()
            try claim(id, in: &ioSources, by: entry.path, at: cursor, "IoSource \"\(id)\"")
            return id
        }
        return PWMOutputDevice(
            ioActorId: ioActorId, chip: chip, channel: channel, settings: settings, control: control,
            dutySourceId: dutySourceId, path: entry.path)
    }

    /// `{"points": [[40, 0], [60, 50], [75, 100]], "hysteresis": 2}`; points may be
    /// `{"shared": "<object>.<key>", "default": [...]}`.
    func curve(_ cursor: JSONCursor) throws(JSONShapeError) -> PWMControl {
        try cursor.allowOnly(["points", "hysteresis"])
        let pointsCursor = try cursor.required("points")
        func fanCurve(_ cursor: JSONCursor) throws(JSONShapeError) -> FanCurve {
            do {
                return try FanCurve(json: cursor.value)
            } catch {
                let path = error.index.map { cursor.path.appending($0) } ?? cursor.path
                throw JSONShapeError(path: path, reason: error.reason)
            }
        }
        let points: CurveSettings.Points
        if case .object = pointsCursor.value {
            try pointsCursor.allowOnly(["shared", "default"])
            let (object, key) = try sharedReference(pointsCursor.required("shared"), example: "fan.curve")
            let fallback = try pointsCursor.optional("default").map { (cursor) throws(JSONShapeError) in
                try fanCurve(cursor)
            }
            points = .shared(object: object, key: key, fallback: fallback)
        } else {
            points = .fixed(try fanCurve(pointsCursor))
        }
        var band = 0.0
        if let bandCursor = try cursor.optional("hysteresis") {
            band = try bandCursor.number()
            guard band >= 0, band.isFinite else { throw bandCursor.error("must not be negative") }
        }
        return .curve(CurveSettings(points: points, band: band))
    }

    // MARK: Counters

    mutating func counter(_ entry: JSONCursor) throws(JSONShapeError) -> CounterDevice {
        try entry.allowOnly([
            "driver", "chip", "line", "activeLow", "edge", "debounce", "publishInterval", "total", "rate", "quantity",
            "stateFile",
        ])
        let line = try line(entry)
        func duration(_ key: String, default value: Duration, minimum: Duration) throws(JSONShapeError) -> Duration {
            guard let cursor = try entry.optional(key) else { return value }
            let duration = try Duration(parsing: cursor)
            guard duration >= minimum else { throw cursor.error("must be at least \(minimum.configurationText)") }
            return duration
        }
        var device = CounterDevice(
            line: line, activeLow: try entry.optional("activeLow")?.bool() ?? false,
            edge: try entry.optional("edge").map { (cursor) throws(JSONShapeError) in try choice(cursor) } ?? .rising,
            debounce: try duration("debounce", default: .zero, minimum: .zero),
            publishInterval: try duration("publishInterval", default: .seconds(10), minimum: .milliseconds(100)),
            rateWindow: .seconds(60), ratePer: .seconds(1), pulsesPerUnit: nil, stateFile: nil, path: entry.path)
        func source(_ cursor: JSONCursor) throws(JSONShapeError) -> String {
            let sourceCursor = try cursor.required("ioSource")
            let id = try sourceCursor.nonEmptyString()
            try claim(id, in: &ioSources, by: entry.path, at: sourceCursor, "IoSource \"\(id)\"")
            return id
        }
        if let total = try entry.optional("total") {
            try total.allowOnly(["ioSource"])
            device.totalSourceId = try source(total)
        }
        if let rate = try entry.optional("rate") {
            try rate.allowOnly(["ioSource", "window", "per"])
            device.rateSourceId = try source(rate)
            if let window = try rate.optional("window") {
                device.rateWindow = try Duration(parsing: window)
                guard device.rateWindow >= device.publishInterval, device.rateWindow <= .seconds(86_400) else {
                    throw window.error(
                        "must be at least the publishInterval, \(device.publishInterval.configurationText), and at most 24h"
                    )
                }
            }
            if let per = try rate.optional("per") {
                device.ratePer =
                    switch try per.oneOf(["second", "minute", "hour"]) {
                    case "minute": .seconds(60)
                    case "hour": .seconds(3600)
                    default: .seconds(1)
                    }
            }
        }
        if let quantity = try entry.optional("quantity") {
            try quantity.allowOnly(["ioSource", "pulsesPerUnit"])
            device.quantitySourceId = try source(quantity)
            let perUnit = try quantity.required("pulsesPerUnit")
            device.pulsesPerUnit = try perUnit.number()
            guard let value = device.pulsesPerUnit, value > 0, value.isFinite else {
                throw perUnit.error("must be above zero")
            }
        }
        guard !device.sourceIds.isEmpty else {
            throw entry.error("must publish at least one of \"total\", \"rate\" and \"quantity\" to an IoSource")
        }
        if let file = try entry.optional("stateFile") {
            let path = try file.nonEmptyString()
            guard path.hasPrefix("/") else { throw file.error("must be an absolute path") }
            try claim(path, in: &stateFiles, by: entry.path, at: file, "state file \(path)")
            device.stateFile = path
        }
        return device
    }

    mutating func input(_ entry: JSONCursor) throws(JSONShapeError) -> InputDevice {
        try entry.allowOnly(["driver", "ioSource", "chip", "line", "activeLow", "debounce", "values"])
        let ioSourceId = try ioSource(entry)
        let line = try line(entry)
        let activeLow = try entry.optional("activeLow")?.bool() ?? false
        let debounce =
            try entry.optional("debounce").map { (cursor) throws(JSONShapeError) in try Duration(parsing: cursor) }
            ?? .zero
        var mapping = InputMapping.boolean
        if let values = try entry.optional("values") {
            try values.allowOnly(["active", "inactive"])
            mapping = InputMapping(
                active: try values.required("active").value, inactive: try values.required("inactive").value)
            guard mapping.active != mapping.inactive else {
                throw values.error("\"active\" and \"inactive\" must differ, or the input tells nothing")
            }
        }
        return InputDevice(
            ioSourceId: ioSourceId, line: line, activeLow: activeLow, debounce: debounce, mapping: mapping,
            path: entry.path)
    }

    /// The entry's `chip` and `line`, claimed for it.
    mutating func line(_ entry: JSONCursor) throws(JSONShapeError) -> GPIOLineAddress {
        let chipCursor = try entry.required("chip")
        let chip: String
        if case .number = chipCursor.value {
            chip = "gpiochip\(try chipCursor.integer(in: 0...255))"
        } else {
            guard case .string(let name) = chipCursor.value, !name.isEmpty else {
                throw chipCursor.error(
                    "expected a chip name like \"gpiochip0\", a chip label like \"pinctrl-rp1\" or a chip number, found \(describe(chipCursor.value))"
                )
            }
            chip = name.hasPrefix("/dev/") ? String(name.dropFirst(5)) : name
        }
        let lineCursor = try entry.required("line")
        let line: GPIOLineAddress
        if case .string(let name) = lineCursor.value {
            guard !name.isEmpty else {
                throw lineCursor.error("expected a line offset or a line name like \"GPIO17\", found an empty string")
            }
            guard !name.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                throw lineCursor.error(
                    "\"\(name)\" is no line name: write an offset as a number, \(name), or a name like \"GPIO\(name)\"")
            }
            line = GPIOLineAddress(chip: chip, lineName: name)
        } else {
            line = GPIOLineAddress(chip: chip, offset: try lineCursor.integer(in: 0...1023))
        }
        try claim(line, in: &lines, by: entry.path, at: lineCursor, "\(line)")
        return line
    }

    // MARK: Shared

    /// One of the cases of `Choice`, by its raw value.
    func choice<Choice: RawRepresentable & CaseIterable>(_ cursor: JSONCursor) throws(JSONShapeError) -> Choice
    where Choice.RawValue == String {
        let text = try cursor.string()
        if let choice = Choice(rawValue: text) { return choice }
        let names = Choice.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        throw cursor.error("\"\(text)\" is not one of \(names)")
    }

    /// The entry's `ioSource`, claimed for it.
    mutating func ioSource(_ entry: JSONCursor) throws(JSONShapeError) -> String {
        let cursor = try entry.required("ioSource")
        let id = try cursor.nonEmptyString()
        try claim(id, in: &ioSources, by: entry.path, at: cursor, "IoSource \"\(id)\"")
        return id
    }

    /// Records that `owner` uses `key`, or fails at `cursor` naming the owner that used it first.
    func claim<Key: Hashable>(
        _ key: Key, in taken: inout [Key: JSONPath], by owner: JSONPath, at cursor: JSONCursor, _ what: String
    ) throws(JSONShapeError) {
        if let first = taken[key] { throw cursor.error("\(what) is already used by \(first)") }
        taken[key] = owner
    }

    func describe(_ value: JSONValue) -> String {
        if case .string = value { return "an empty string" }
        return value.typeName
    }
}

// MARK: Durations

extension Duration {
    private static let units: [(suffix: String, nanoseconds: Int64)] = [
        ("ms", 1_000_000), ("min", 60_000_000_000), ("s", 1_000_000_000), ("h", 3_600_000_000_000),
    ]

    /// A duration written as a number and a unit: "500ms", "10s", "1.5s", "5min", "1h".
    init(parsing cursor: JSONCursor) throws(JSONShapeError) {
        let example = "like \"500ms\", \"10s\", \"5min\" or \"1h\""
        guard case .string(let text) = cursor.value else {
            throw cursor.error("expected a duration \(example), found \(cursor.value.typeName)")
        }
        let invalid = cursor.error("\"\(text)\" is not a duration \(example)")
        guard let unit = Self.units.first(where: { text.hasSuffix($0.suffix) }) else { throw invalid }
        let parts = text.dropLast(unit.suffix.count).split(
            separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count == 2 ? parts[1] : ""
        let isDigits = { (part: Substring) in part.allSatisfy { $0.isASCII && $0.isNumber } }
        guard !whole.isEmpty, isDigits(whole), isDigits(fraction), parts.count == 1 || !fraction.isEmpty,
            whole.count + fraction.count <= 15, let mantissa = Int64(whole + fraction)
        else { throw invalid }
        var divisor: Int64 = 1
        for _ in fraction { divisor *= 10 }
        let (scaled, overflow) = mantissa.multipliedReportingOverflow(by: unit.nanoseconds)
        guard !overflow else { throw cursor.error("\"\(text)\" is too long") }
        self = .nanoseconds(scaled / divisor)
    }

    /// The duration the way the configuration writes it: "100ms", "1s", "5min".
    var configurationText: String {
        let nanoseconds = components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
        for unit in Self.units.sorted(by: { $0.nanoseconds > $1.nanoseconds }) where nanoseconds % unit.nanoseconds == 0
        {
            return "\(nanoseconds / unit.nanoseconds)\(unit.suffix)"
        }
        return "\(nanoseconds)ns"
    }
}

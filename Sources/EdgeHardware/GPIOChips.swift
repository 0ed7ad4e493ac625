import CGPIOD

#if canImport(Glibc)
    import Glibc
#endif

/// A GPIO chip of the machine as libgpiod reports it.
public struct GPIOChipInfo: Sendable, Hashable, CustomStringConvertible {
    /// `gpiochip0`.
    public var name: String
    /// `pinctrl-rp1` on a Raspberry Pi 5, `pinctrl-bcm2711` on a Pi 4.
    public var label: String
    public var lineCount: Int

    public var path: String { "/dev/" + name }
    public var description: String { "\(name) (\(label), \(lineCount) lines)" }
}

/// A configured line found on the machine: the chip's device node and the line's offset.
public struct ResolvedGPIOLine: Sendable, Hashable, CustomStringConvertible {
    public var chip: GPIOChipInfo
    public var offset: Int
    /// The line's name, when the chip gives it one.
    public var lineName: String?

    public var chipPath: String { chip.path }
    public var description: String {
        "\(chip.name) (\(chip.label)) line \(offset)" + (lineName.map { " (\($0))" } ?? "")
    }
}

/// Finds GPIO chips by name or label and lines by offset or name, through libgpiod.
public enum GPIOChips {
    /// The GPIO chips present, by name: every `gpiochipN` node under /dev that libgpiod opens as a GPIO chip.
    public static func present() -> [GPIOChipInfo] {
        let names = (SysfsFile.entries(of: "/dev") ?? []).filter { $0.hasPrefix("gpiochip") }
        return names.compactMap(info(ofChipAt:)).sorted { $0.name.localizedNumericLess(than: $1.name) }
    }

    /// The chip at `path`, or nil when it is no GPIO chip.
    public static func info(ofChipAt nameOrPath: String) -> GPIOChipInfo? {
        let path = nameOrPath.hasPrefix("/") ? nameOrPath : "/dev/" + nameOrPath
        guard let chip = gpiod_chip_open(path) else { return nil }
        defer { gpiod_chip_close(chip) }
        return GPIOChipInfo(
            name: String(cString: gpiod_chip_name(chip)), label: String(cString: gpiod_chip_label(chip)),
            lineCount: Int(gpiod_chip_num_lines(chip)))
    }

    /// Whether the configuration's `chip` names a device (`gpiochip0`, `/dev/gpiochip0`) rather than a label.
    public static func isDeviceName(_ chip: String) -> Bool {
        if chip.hasPrefix("/") { return true }
        guard chip.hasPrefix("gpiochip") else { return false }
        let digits = chip.dropFirst("gpiochip".count)
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// The chip and offset of a configured line: a chip by its name or, failing that, its label; a line by offset or
    /// by name. The error lists the chips present when the chip is not found.
    public static func resolve(_ address: GPIOLineAddress) throws(GPIOError) -> ResolvedGPIOLine {
        let chip: GPIOChipInfo
        if isDeviceName(address.chip) {
            let path = address.chip.hasPrefix("/") ? address.chip : "/dev/" + address.chip
            guard let found = info(ofChipAt: path) else {
                throw .noChip("cannot open \(path) as a GPIO chip; \(presentList())")
            }
            chip = found
        } else {
            let labelled = present().filter { $0.label == address.chip }
            guard let found = labelled.first else {
                throw .noChip("no GPIO chip named or labelled \"\(address.chip)\"; \(presentList())")
            }
            guard labelled.count == 1 else {
                throw .noChip(
                    "\(labelled.count) GPIO chips are labelled \"\(address.chip)\" (\(labelled.map(\.name).joined(separator: ", "))): name one"
                )
            }
            chip = found
        }
        switch address.line {
        case .offset(let offset):
            guard offset < chip.lineCount else {
                throw .lineUnavailable(
                    "\(chip.name) (\(chip.label)) has no line \(offset); its lines are 0...\(chip.lineCount - 1)")
            }
            return ResolvedGPIOLine(chip: chip, offset: offset, lineName: lineName(chip, offset))
        case .name(let name):
            guard let handle = gpiod_chip_open(chip.path) else {
                throw .noChip("cannot open \(chip.path): \(describe(errno))")
            }
            defer { gpiod_chip_close(handle) }
            guard let line = gpiod_chip_find_line(handle, name) else {
                throw .lineUnavailable("\(chip.name) (\(chip.label)) has no line named \"\(name)\"")
            }
            return ResolvedGPIOLine(chip: chip, offset: Int(gpiod_line_offset(line)), lineName: name)
        }
    }

    private static func lineName(_ chip: GPIOChipInfo, _ offset: Int) -> String? {
        guard let handle = gpiod_chip_open(chip.path) else { return nil }
        defer { gpiod_chip_close(handle) }
        guard let line = gpiod_chip_get_line(handle, UInt32(offset)), let name = gpiod_line_name(line) else {
            return nil
        }
        return String(cString: name)
    }

    private static func presentList() -> String {
        let chips = present()
        return chips.isEmpty
            ? "no GPIO chips are present" : "chips present: " + chips.map(\.description).joined(separator: ", ")
    }
}

extension String {
    /// `gpiochip2` before `gpiochip10`.
    fileprivate func localizedNumericLess(than other: String) -> Bool {
        let digits = { (text: String) in Int(text.drop { !$0.isNumber }) ?? 0 }
        return (digits(self), self) < (digits(other), other)
    }
}

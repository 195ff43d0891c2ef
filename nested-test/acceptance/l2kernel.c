// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * l2kernel - the L2 guests' kernel: a Multiboot (v1) kernel that QEMU loads
 * with -kernel/-initrd/-append (as libvirt's <os><kernel>, <initrd>,
 * <cmdline> pass them).  It prints
 *
 *   HVOACC-L2 NAME up <first line of the initramfs>
 *
 * on COM1, NAME from "hvoacc.name=" on its command line, then idles with
 * interrupts off (hlt), so an idle guest costs L1 no CPU under TCG.
 * A Linux guest takes minutes to reach its marker under TCG inside TCG;
 * this one takes well under a second.  32-bit, freestanding, no libc.
 */
#include <stdint.h>

#define MB_MAGIC 0x1BADB002u
#define MB_FLAGS 0x00000003u /* modules page aligned, memory info */

__attribute__((section(".multiboot"), used, aligned(4)))
static const uint32_t mb_header[3] = { MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS) };

struct mb_info {
	uint32_t flags, mem_lower, mem_upper, boot_device, cmdline;
	uint32_t mods_count, mods_addr;
};
struct mb_mod {
	uint32_t start, end, string, reserved;
};

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static void putc_com1(char c)
{
	while (!(inb(0x3f8 + 5) & 0x20))
		;
	outb(0x3f8, (uint8_t)c);
}

static void puts_com1(const char *s, uint32_t max)
{
	for (uint32_t i = 0; i < max && s[i] && s[i] != '\n'; i++)
		putc_com1(s[i]);
}

static const char *find(const char *s, const char *w)
{
	for (; s && *s; s++) {
		uint32_t i = 0;

		while (w[i] && s[i] == w[i])
			i++;
		if (!w[i])
			return s + i;
	}
	return 0;
}

void l2_main(uint32_t magic, const struct mb_info *mbi);
void l2_main(uint32_t magic, const struct mb_info *mbi)
{
	const char *name = 0;

	if (magic == 0x2BADB002u && (mbi->flags & 4))
		name = find((const char *)(uintptr_t)mbi->cmdline, "hvoacc.name=");
	puts_com1("HVOACC-L2 ", 64);
	if (name) {
		uint32_t i = 0;

		while (name[i] && name[i] != ' ' && i < 64)
			putc_com1(name[i++]);
	} else {
		puts_com1("unnamed", 64);
	}
	puts_com1(" up ", 64);
	if (magic == 0x2BADB002u && (mbi->flags & 8) && mbi->mods_count) {
		const struct mb_mod *m = (const struct mb_mod *)(uintptr_t)mbi->mods_addr;

		puts_com1((const char *)(uintptr_t)m->start, m->end - m->start);
	} else {
		puts_com1("no-initramfs", 64);
	}
	putc_com1('\r');
	putc_com1('\n');
	for (;;)
		__asm__ volatile("cli; hlt");
}

__asm__(".pushsection .text\n"
	".global _start\n"
	"_start:\n"
	"  mov $stack_top, %esp\n"
	"  push %ebx\n"
	"  push %eax\n"
	"  call l2_main\n"
	"1: cli; hlt; jmp 1b\n"
	".popsection\n"
	".pushsection .bss\n"
	".align 16\n"
	".skip 4096\n"
	"stack_top:\n"
	".popsection\n");

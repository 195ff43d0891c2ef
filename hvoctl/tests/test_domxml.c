/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Domain XML -> huge page demand: every supported layout on fixtures in
 * tests/xml, and hostile input (entities, DTDs, sizes, units, depth,
 * encoding, empty input). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "domxml.h"

#define GIB (1024ULL * 1024 * 1024)

static char err[512];
static struct hv_demand d;

static char *slurp(const char *name, size_t *len)
{
	char path[4096];
	FILE *f;
	char *buf = malloc(1 << 20);

	snprintf(path, sizeof(path), "%s/%s", TEST_XML_DIR, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static int run_file(const char *name)
{
	size_t len;
	char *x = slurp(name, &len);
	int r = hv_dom_demand(x, len, 2048, &d, err, sizeof(err));

	free(x);
	return r;
}

static int run_str(const char *x)
{
	return hv_dom_demand(x, strlen(x), 2048, &d, err, sizeof(err));
}

static const struct hv_demand_item *item(uint64_t kb, const char *nodes)
{
	char buf[256];

	for (size_t i = 0; i < d.n; i++) {
		hv_nodeset_format(&d.items[i].nodes, buf, sizeof(buf));
		if (d.items[i].size_kb == kb && !strcmp(buf, nodes) &&
		    d.items[i].strict == (strcmp(nodes, "any") != 0))
			return &d.items[i];
	}
	fail_msg("no item %llu kB nodes %s", (unsigned long long)kb, nodes);
	return NULL;
}

static void refused(const char *name_or_xml, bool file, const char *what)
{
	int r = file ? run_file(name_or_xml) : run_str(name_or_xml);

	if (r != -1 || !strstr(err, what))
		fail_msg("%s: expected refusal with '%s', got %d '%s'", file ? name_or_xml : "xml",
			 what, r, err);
	assert_int_equal(d.n, 0);
}

static void t_none(void **s)
{
	(void)s;
	assert_int_equal(run_file("none.xml"), 0);
	assert_false(d.hugepages);
	assert_int_equal(d.n, 0);
	assert_string_equal(d.uuid, "11111111-1111-1111-1111-111111111111");
	assert_string_equal(d.name, "plain");
}

static void t_simple_1g(void **s)
{
	(void)s;
	assert_int_equal(run_file("simple-1g.xml"), 0);
	assert_true(d.hugepages);
	assert_string_equal(d.uuid, "2a3b4c5d-0000-4000-8000-00000000000a");
	assert_int_equal(d.n, 1);
	assert_int_equal(item(1048576, "any")->pages, 4);
}

static void t_default_size(void **s)
{
	(void)s;
	assert_int_equal(run_file("default-hp.xml"), 0);
	assert_int_equal(d.n, 1);
	assert_int_equal(item(2048, "any")->pages, 512);
	/* Unknown host default: refused, not guessed. */
	{
		size_t len;
		char *x = slurp("default-hp.xml", &len);

		assert_int_equal(hv_dom_demand(x, len, 0, &d, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "default huge page size is unknown"));
		free(x);
	}
}

static void t_numa_strict(void **s)
{
	(void)s;
	assert_int_equal(run_file("numa-strict.xml"), 0);
	assert_int_equal(d.n, 3);
	assert_int_equal(item(1048576, "0")->pages, 2);      /* cell 0: memnode strict 0 */
	assert_int_equal(item(2048, "any")->pages, 1024);    /* cell 1: preferred */
	assert_int_equal(item(2048, "0-1")->pages, 1024);    /* cell 2: numatune strict */
}

static void t_dimm(void **s)
{
	(void)s;
	assert_int_equal(run_file("dimm.xml"), 0);
	assert_int_equal(d.n, 2);
	assert_int_equal(item(2048, "0")->pages, 2048 + 512);
	assert_int_equal(item(1048576, "1")->pages, 2);
}

/* Guest RAM from device-dax: an nvdimm whose <source><path> is /dev/daxR.N
 * (the only way libvirt 9.0 maps devdax into a guest) is no HugeTLB demand,
 * even with <hugepages>: only the initial memory of the cells is, here
 * 2 GiB of the 10 in <memory>. */
static void t_devdax_nvdimm(void **s)
{
	(void)s;
	assert_int_equal(run_str("<domain><uuid>99999999-9999-9999-9999-999999999998</uuid>"
				 "<maxMemory slots='4' unit='GiB'>64</maxMemory>"
				 "<memory unit='GiB'>10</memory>"
				 "<memoryBacking><hugepages><page size='1' unit='G'/>"
				 "</hugepages></memoryBacking><devices><memory model='nvdimm' "
				 "access='shared'><source><path>/dev/dax0.0</path>"
				 "<alignsize unit='GiB'>1</alignsize></source><target>"
				 "<size unit='GiB'>8</size><node>0</node><label><size "
				 "unit='KiB'>128</size></label></target></memory></devices>"
				 "</domain>"), 0);
	assert_int_equal(d.n, 1);
	assert_int_equal(item(1048576, "any")->pages, 2);
}

#define QEMU_NS "xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'"
#define DAX_GUEST "<domain type='kvm' " QEMU_NS "><name>vm-dax</name>" \
	"<uuid>99999999-9999-9999-9999-999999999997</uuid>" \
	"<maxMemory slots='4' unit='GiB'>64</maxMemory><memory unit='GiB'>10</memory>" \
	"<memoryBacking><hugepages><page size='1' unit='G'/></hugepages></memoryBacking>" \
	"<devices><memory model='nvdimm'><source><path> /dev/dax0.0 </path></source>" \
	"<target><size unit='GiB'>8</size><node>0</node></target></memory>" \
	"<memory model='nvdimm'><source><path>/dev/dax0.0</path></source>" \
	"<target><size unit='KiB'>0</size></target></memory>" \
	"<memory model='nvdimm'><source><path>/srv/pmem.img</path></source>" \
	"<target><size unit='KiB'>0</size></target></memory></devices>" \
	"<qemu:commandline><qemu:arg value='-object'/>" \
	"<qemu:arg value='memory-backend-file,id=m1,mem-path=/dev/dax1.0,size=4G,align=2M'/>" \
	"<qemu:arg value='{&quot;qom-type&quot;:&quot;memory-backend-file&quot;,&quot;id&quot;:" \
	"&quot;m2&quot;,&quot;mem-path&quot; : &quot;/dev/dax2.1&quot;}'/>" \
	"<qemu:arg value='memory-backend-file,id=m3,mem-path=/dev/hugepages/x'/>" \
	"<qemu:arg value='nomem-path=/dev/dax7.0,mem-path=/dev/dax8'/>" \
	"</qemu:commandline></domain>"

/* Which device-dax instances a guest uses: nvdimm paths and the mem-path
 * of memory-backend-file objects on QEMU's command line, each once; other
 * files, hugetlbfs, look-alikes are not.  The HugeTLB demand is the
 * initial memory only. */
static void t_devdax_uses(void **s)
{
	struct hv_dom_dax u;
	const char *x = DAX_GUEST;

	(void)s;
	assert_int_equal(hv_dom_dax_uses(x, strlen(x), &u), 0);
	assert_string_equal(u.name, "vm-dax");
	assert_int_equal(u.n, 3);
	assert_string_equal(u.dax[0], "dax0.0");
	assert_string_equal(u.dax[1], "dax1.0");
	assert_string_equal(u.dax[2], "dax2.1");
	assert_int_equal(run_str(DAX_GUEST), 0);
	assert_int_equal(d.n, 1);
	assert_int_equal(item(1048576, "any")->pages, 2);

	/* libvirt's status file wraps the domain */
	x = "<domstatus state='running' pid='42'><domain type='kvm'><name>st</name>"
	    "<devices><memory model='virtio-pmem'><source><path>/dev/dax3.0</path>"
	    "</source></memory></devices></domain></domstatus>";
	assert_int_equal(hv_dom_dax_uses(x, strlen(x), &u), 0);
	assert_string_equal(u.name, "st");
	assert_int_equal(u.n, 1);
	assert_string_equal(u.dax[0], "dax3.0");
	x = "<network><name>default</name></network>";
	assert_int_equal(hv_dom_dax_uses(x, strlen(x), &u), -1);
	x = "<domain><name>broken</domain>";
	assert_int_equal(hv_dom_dax_uses(x, strlen(x), &u), -1);
}

/* virtio-mem is backed like a DIMM (libvirt 9.0): its own <pagesize>, else
 * the page of its target cell; counted with its whole <target><size>. */
static void t_virtio_mem(void **s)
{
	(void)s;
	assert_int_equal(run_str("<domain><uuid>99999999-9999-9999-9999-999999999999</uuid>"
				 "<memory unit='GiB'>5</memory>"
				 "<memoryBacking><hugepages><page size='1' unit='G'/>"
				 "</hugepages></memoryBacking><devices><memory model='virtio-mem'>"
				 "<target><size unit='GiB'>1</size><node>0</node>"
				 "<block unit='MiB'>2</block><requested unit='MiB'>0</requested>"
				 "</target></memory></devices></domain>"), 0);
	assert_int_equal(d.n, 1);
	assert_int_equal(item(1048576, "any")->pages, 5);
	assert_int_equal(run_str("<domain><uuid>99999999-9999-9999-9999-999999999999</uuid>"
				 "<memory unit='GiB'>5</memory>"
				 "<devices><memory model='virtio-mem'><source><pagesize unit='M'>2"
				 "</pagesize><nodemask>1</nodemask></source><target><size "
				 "unit='GiB'>1</size><node>0</node></target></memory></devices>"
				 "</domain>"), 0);
	assert_true(d.hugepages);
	assert_int_equal(d.n, 1);
	assert_int_equal(item(2048, "1")->pages, 512);
}

static void t_units(void **s)
{
	(void)s;
	assert_int_equal(run_file("units.xml"), 0);
	assert_string_equal(d.uuid, "66666666-6666-6666-6666-666666666666");
	assert_int_equal(item(2048, "any")->pages, 1431); /* 3 GB = 3e9 bytes, rounded up */
}

static void t_interleave(void **s)
{
	(void)s;
	assert_int_equal(run_file("interleave.xml"), 0);
	assert_int_equal(item(1048576, "any")->pages, 2);
}

static void t_scale(void **s)
{
	static const struct { const char *unit; uint64_t mul; } u[] = {
		{ "", 1024 }, { "b", 1 }, { "bytes", 1 }, { "byte", 1 },
		{ "KB", 1000 }, { "k", 1024 }, { "KiB", 1024 }, { "kib", 1024 },
		{ "MB", 1000000 }, { "M", 1048576 }, { "MiB", 1048576 },
		{ "GB", 1000000000ULL }, { "G", GIB }, { "GiB", GIB },
		{ "TB", 1000000000000ULL }, { "T", GIB * 1024 }, { "TiB", GIB * 1024 },
		{ "PB", 1000000000000000ULL }, { "P", GIB * 1048576 }, { "PiB", GIB * 1048576 },
		{ "EB", 1000000000000000000ULL }, { "E", GIB * GIB }, { "EiB", GIB * GIB },
	};
	uint64_t b;

	(void)s;
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		assert_int_equal(hv_dom_scale("1", u[i].unit, 1024, &b), 0);
		assert_true(b == u[i].mul);
	}
	assert_int_equal(hv_dom_scale("16", "EiB", 1024, &b), -ERANGE);
	assert_int_equal(hv_dom_scale("1", "XB", 1024, &b), -EINVAL);
	assert_int_equal(hv_dom_scale("1", "KiBB", 1024, &b), -EINVAL);
	assert_int_equal(hv_dom_scale("-1", "KiB", 1024, &b), -EINVAL);
	assert_int_equal(hv_dom_scale("+1", "KiB", 1024, &b), -EINVAL);
	assert_int_equal(hv_dom_scale("1.5", "GiB", 1024, &b), -EINVAL);
	assert_int_equal(hv_dom_scale("", "GiB", 1024, &b), -EINVAL);
}

static void t_nodeset(void **s)
{
	struct hv_nodeset ns;
	char buf[64];

	(void)s;
	assert_int_equal(hv_nodeset_parse("0-3,^2, 5", &ns), 0);
	hv_nodeset_format(&ns, buf, sizeof(buf));
	assert_string_equal(buf, "0-1,3,5");
	assert_int_equal(hv_nodeset_parse("4096", &ns), -ERANGE);
	assert_int_equal(hv_nodeset_parse("3-1", &ns), -EINVAL);
	assert_int_equal(hv_nodeset_parse("-1", &ns), -EINVAL);
	assert_int_equal(hv_nodeset_parse("1,^1", &ns), -EINVAL);
	assert_int_equal(hv_nodeset_parse("", &ns), -EINVAL);
	assert_int_equal(hv_nodeset_parse("0,,1", &ns), -EINVAL);
}

static void t_uuid(void **s)
{
	char u[37];

	(void)s;
	assert_int_equal(hv_uuid_canon(" 0123456789ABCDEF0123456789abcdef\n", u), 0);
	assert_string_equal(u, "01234567-89ab-cdef-0123-456789abcdef");
	assert_int_equal(hv_uuid_canon("../../etc/passwd", u), -EINVAL);
	assert_int_equal(hv_uuid_canon("0123456789abcdef0123456789abcde", u), -EINVAL);
	assert_int_equal(hv_uuid_canon("0123456789abcdef0123456789abcdef0", u), -EINVAL);
	assert_int_equal(hv_uuid_canon("01234567-89ab-cdef-0123-456789abcdef x", u), -EINVAL);
}

static void t_hostile_files(void **s)
{
	(void)s;
	refused("billion-laughs.xml", true, "DOCTYPE");
	refused("external-dtd.xml", true, "DOCTYPE");
	refused("xxe.xml", true, "DOCTYPE");
	refused("huge-size.xml", true, "too large");
	refused("overflow.xml", true, "too large");
	refused("unit-bad.xml", true, "unit 'XB'");
	refused("negative.xml", true, "not a non-negative whole number");
	refused("non-utf8.xml", true, "not well-formed");
	refused("auto-placement.xml", true, "placement='auto'");
}

static void t_dotdot_name(void **s)
{
	(void)s;
	/* Parsed; the name is kept for messages, the key is the UUID. */
	assert_int_equal(run_file("dotdot-name.xml"), 0);
	assert_string_equal(d.name, "../../../etc/evil");
	assert_string_equal(d.uuid, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
}

#define HP "<memoryBacking><hugepages><page size='1' unit='G'/></hugepages></memoryBacking>"
#define U "<uuid>99999999-9999-9999-9999-999999999999</uuid>"

static void t_hostile_inline(void **s)
{
	char *deep, *big;
	size_t n = 0;

	(void)s;
	refused("", false, "empty");
	refused("   ", false, "not well-formed");
	refused("<domain>", false, "not well-formed");
	refused("<other/>", false, "root element");
	refused("<?xml version='1.0' encoding='ISO-8859-1'?><domain><name>\xe9</name>"
		U "<memory>1</memory>" HP "</domain>", false, "not well-formed");
	refused("<domain>" U "<memory>1</memory><memory>2</memory>" HP "</domain>", false,
		"given twice");
	refused("<domain>" U HP "</domain>", false, "no <memory>");
	refused("<domain><memory>4194304</memory>" HP "</domain>", false, "no <uuid>");
	refused("<domain><uuid>../x</uuid><memory>4</memory>" HP "</domain>", false, "not a UUID");
	refused("<domain>" U "<memory unit='GiB'>4 GiB</memory>" HP "</domain>", false,
		"not a non-negative whole number");
	refused("<domain>" U "<memory unit='GiB'>4</memory><memoryBacking><hugepages>"
		"<page size='3' unit='M'/></hugepages></memoryBacking></domain>", false,
		"not a page size");
	refused("<domain>" U "<memory unit='GiB'>4</memory><memoryBacking><hugepages>"
		"<page size='1' unit='G' nodeset='1'/></hugepages></memoryBacking></domain>",
		false, "cell 1 does not exist");
	refused("<domain>" U "<memory unit='GiB'>4</memory><memoryBacking><hugepages>"
		"<page size='1' unit='G' nodeset='0'/><page size='2' unit='M' nodeset='0'/>"
		"</hugepages></memoryBacking></domain>", false, "overlap");
	refused("<domain>" U "<memory unit='GiB'>4</memory><memoryBacking><hugepages>"
		"<page size='1' unit='G'/><page size='2' unit='M'/>"
		"</hugepages></memoryBacking></domain>", false, "more than one <page> without");
	refused("<domain>" U "<memory unit='GiB'>4</memory>" HP
		"<numatune><memory mode='random' nodeset='0'/></numatune></domain>", false,
		"mode 'random'");
	refused("<domain>" U "<memory unit='GiB'>4</memory>" HP
		"<numatune><memnode cellid='0' nodeset='0'/></numatune></domain>", false,
		"without guest NUMA cells");
	refused("<domain>" U "<memory unit='GiB'>4</memory>" HP
		"<numatune><memory mode='strict' nodeset='0-99999'/></numatune></domain>", false,
		"node id above");
	refused("<domain>" U "<memory unit='GiB'>4</memory>" HP
		"<cpu><numa><cell id='0' memory='1' unit='G'/><cell id='0' memory='1' unit='G'/>"
		"</numa></cpu></domain>", false, "given twice");
	refused("<domain>" U "<memory unit='GiB'>4</memory>" HP
		"<cpu><numa><cell id='0'/></numa></cpu></domain>", false, "no memory attribute");
	refused("<domain>" U "<memory unit='GiB'>4</memory>"
		"<devices><memory model='virtio-pmem'><source><pagesize unit='M'>2</pagesize>"
		"</source><target><size unit='G'>1</size></target></memory></devices></domain>",
		false, "only supported for model='dimm' and 'virtio-mem'");
	refused("<domain>" U "<memory unit='GiB'>4</memory>" HP
		"<devices><memory model='magic'><target><size unit='G'>1</size></target>"
		"</memory></devices></domain>", false, "unknown memory device model");
	refused("<domain>" U "<memory unit='GiB'>1</memory>" HP
		"<devices><memory model='dimm'><target><size unit='G'>2</size></target>"
		"</memory></devices></domain>", false, "smaller than the memory devices");
	refused("<domain>" U "<memory unit='GiB'>4</memory><currentMemory unit='GiB'>5"
		"</currentMemory>" HP "</domain>", false, "larger than <memory>");
	refused("<domain>" U "<memory unit='GiB'>4</memory><memoryBacking><hugepages>"
		"<page size='99999999999999999999999'/></hugepages></memoryBacking></domain>",
		false, "too large");

	/* Namespaced elements are not libvirt's, undefined entities are errors. */
	refused("<domain xmlns='urn:x'>" U "<memory>4</memory>" HP "</domain>", false,
		"root element");
	refused("<domain>" U "<memory xmlns='urn:x'>4</memory>" HP "</domain>", false,
		"no <memory>");
	refused("<domain>" U "<memory>&x;</memory>" HP "</domain>", false, "not well-formed");
	refused("<domain>" U "<memory>4</memory>" HP "</domain><domain/>", false,
		"not well-formed");

	/* What the parser refuses: not well-formed XML 1.0, or not UTF-8. */
	{
		static const char *const bad[][2] = {
			{ "<domain a='1' a='2'/>", "given twice" },
			{ "<domain><a></b></domain>", "does not match" },
			{ "<domain>&#0;</domain>", "character reference" },
			{ "<domain>&#x110000;</domain>", "character reference" },
			{ "<?xml version='2.0'?><domain/>", "XML declaration" },
			{ "<?xml version='1.0'encoding='UTF-8'?><domain/>", "XML declaration" },
			{ "<domain/><?xml version='1.0'?>", "not at the start" },
			{ "<domain><!-- a -- b --></domain>", "inside a comment" },
			{ "<![CDATA[x]]><domain/>", "outside the root" },
			{ "<domain>]]></domain>", "']]>'" },
			{ "<domain a=1/>", "quoted attribute value" },
			{ "<domain a='<'/>", "'<' in an attribute" },
			{ "<domain/><domain/>", "more than one root" },
			{ "<domain/>x", "outside the root" },
			{ "<?x-y?><domain", "not well-formed" },
			{ "<domain>\xc0\xaf</domain>", "not UTF-8" },
			{ "<domain>\xed\xa0\x80</domain>", "not UTF-8" },
			{ "<domain>\x01</domain>", "not UTF-8" },
			{ "<domain>\xf4\x90\x80\x80</domain>", "not UTF-8" },
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			refused(bad[i][0], false, bad[i][1]);
	}

	/* Deeply nested elements: refused past 256 levels, no recursion here. */
	deep = malloc(200000);
	assert_non_null(deep);
	n += (size_t)sprintf(deep, "<domain>" U "<memory>1048576</memory>" HP);
	for (int i = 0; i < 10000; i++)
		n += (size_t)sprintf(deep + n, "<a>");
	for (int i = 0; i < 10000; i++)
		n += (size_t)sprintf(deep + n, "</a>");
	sprintf(deep + n, "</domain>");
	refused(deep, false, "not well-formed");
	free(deep);

	/* Larger than 1 MiB: refused before parsing. */
	big = malloc(HV_DOM_MAX_XML + 2);
	assert_non_null(big);
	memset(big, ' ', HV_DOM_MAX_XML + 1);
	memcpy(big, "<domain>", 8);
	assert_int_equal(hv_dom_demand(big, HV_DOM_MAX_XML + 1, 2048, &d, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "larger than"));
	free(big);
}

static void t_benign_markup(void **s)
{
	(void)s;
	/* Comments, CDATA, foreign namespaces and unknown elements are fine. */
	assert_int_equal(run_str("<?xml version='1.0'?><!-- c --><domain>" U
				 "<description><![CDATA[<!DOCTYPE x>]]></description>"
				 "<metadata><x:y xmlns:x='urn:x'><x:memory>1</x:memory></x:y></metadata>"
				 "<memory unit='G'>2</memory>" HP "<whatever/></domain>"), 0);
	assert_int_equal(item(1048576, "any")->pages, 2);
	/* A byte order mark, the declaration, CRLF line ends, processing
	 * instructions, references in attribute values. */
	assert_int_equal(run_str("\xef\xbb\xbf<?xml version=\"1.0\" encoding='utf-8' "
				 "standalone='yes' ?>\r\n<?pi x?><domain>\r\n" U
				 "<memory unit='&#71;i&#x42;'>\r\n2\r\n</memory>" HP
				 "</domain>\r\n"), 0);
	assert_int_equal(item(1048576, "any")->pages, 2);
	/* Character references and predefined entities are plain text. */
	assert_int_equal(run_str("<domain>" U "<memory unit='G'>&#51;</memory>" HP
				 "<metadata xmlns='urn:y'><memory>99</memory></metadata></domain>"), 0);
	assert_int_equal(item(1048576, "any")->pages, 3);
	/* 256 levels deep is still accepted. */
	{
		char *deep = malloc(8192);
		size_t n = 0;

		assert_non_null(deep);
		n += (size_t)sprintf(deep, "<domain>" U "<memory>1048576</memory>" HP);
		for (int i = 0; i < 254; i++)
			n += (size_t)sprintf(deep + n, "<a>");
		for (int i = 0; i < 254; i++)
			n += (size_t)sprintf(deep + n, "</a>");
		sprintf(deep + n, "</domain>");
		assert_int_equal(run_str(deep), 0);
		free(deep);
	}
	/* Odd sizes round up to whole pages. */
	assert_int_equal(run_str("<domain>" U "<memory unit='MiB'>1025</memory>" HP
				 "</domain>"), 0);
	assert_int_equal(item(1048576, "any")->pages, 2);
	/* 4 KiB "huge" pages are normal memory: no demand. */
	assert_int_equal(run_str("<domain>" U "<memory unit='GiB'>4</memory><memoryBacking>"
				 "<hugepages><page size='4' unit='KiB'/></hugepages>"
				 "</memoryBacking></domain>"), 0);
	assert_int_equal(d.n, 0);
	/* A guest without huge pages is never refused, whatever else it has. */
	assert_int_equal(run_str("<domain><memory unit='parsec'>-1</memory></domain>"), 0);
	assert_false(d.hugepages);
	/* Cells not covered by a page element use normal memory. */
	assert_int_equal(run_str("<domain>" U "<memory unit='GiB'>4</memory><memoryBacking>"
				 "<hugepages><page size='1' unit='G' nodeset='1'/></hugepages>"
				 "</memoryBacking><cpu><numa><cell id='0' memory='1' unit='G'/>"
				 "<cell id='1' memory='3' unit='G'/></numa></cpu></domain>"), 0);
	assert_int_equal(d.n, 1);
	assert_int_equal(item(1048576, "any")->pages, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_none),
		cmocka_unit_test(t_simple_1g),
		cmocka_unit_test(t_default_size),
		cmocka_unit_test(t_numa_strict),
		cmocka_unit_test(t_dimm),
		cmocka_unit_test(t_devdax_nvdimm),
		cmocka_unit_test(t_devdax_uses),
		cmocka_unit_test(t_virtio_mem),
		cmocka_unit_test(t_units),
		cmocka_unit_test(t_interleave),
		cmocka_unit_test(t_scale),
		cmocka_unit_test(t_nodeset),
		cmocka_unit_test(t_uuid),
		cmocka_unit_test(t_hostile_files),
		cmocka_unit_test(t_dotdot_name),
		cmocka_unit_test(t_hostile_inline),
		cmocka_unit_test(t_benign_markup),
	};

	return cmocka_run_group_tests_name("domxml", tests, NULL, NULL);
}

/*
 * ct_main.c
 *    The one runner of the consumer's Check unit tests.
 *
 *    ct_run              every suite, in the order of the test files
 *    ct_run NAME...      only those suites: NAME is a test file's name
 *                        without test_ and .c (test_copybin.c: copybin)
 *    ct_run --list       the suites' NAMEs, one a line
 *
 * Each suite runs in its own SRunner and prints Check's summary line under
 * a "== NAME" header, as the separate test binaries did, then a grand total.
 * CK_FORK (default yes) and Check's other variables keep their meaning
 * (CK_RUN_SUITE picks by Check's own suite name, CK_RUN_CASE test cases).
 *
 * The exit status is non-zero when a test failed, when a suite ran no test
 * at all (a suite that lost its tests must not pass as 100%), or when a
 * NAME matched no suite (then nothing runs).
 */
#include "ct_kit.h"

typedef struct CtSuiteEntry
{
	const char *name;			/* test file's: test_NAME.c */
	Suite	   *(*build) (void);
} CtSuiteEntry;

static const CtSuiteEntry ct_suites[] = {
#define CT_SUITE(name) {#name, ct_suite_##name},
#include "ct_suites.h"
#undef CT_SUITE
};

#define CT_NSUITES ((int) (sizeof(ct_suites) / sizeof(ct_suites[0])))

/* Totals over the suites run. */
typedef struct CtTotals
{
	int			suites;
	int			ran;
	int			failed;
	int			empty;			/* suites that ran no test */
} CtTotals;

/* Run one suite in an SRunner of its own and add to the totals. */
static void
ct_run_suite(const CtSuiteEntry *e, CtTotals *tot)
{
	SRunner    *sr = srunner_create(e->build());
	int			ran,
				failed;

	printf("== %s\n", e->name);
	fflush(stdout);
	srunner_run_all(sr, CK_NORMAL);
	ran = srunner_ntests_run(sr);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (ran <= 0)
	{
		fprintf(stderr, "%s: no tests ran\n", e->name);
		tot->empty++;
	}
	tot->suites++;
	tot->ran += ran;
	tot->failed += failed;
}

static const CtSuiteEntry *
ct_find(const char *name)
{
	for (int i = 0; i < CT_NSUITES; i++)
		if (strcmp(name, ct_suites[i].name) == 0)
			return &ct_suites[i];
	return NULL;
}

int
main(int argc, char **argv)
{
	CtTotals	tot = {0, 0, 0, 0};
	int			unknown = 0;

	if (argc == 2 && strcmp(argv[1], "--list") == 0)
	{
		for (int i = 0; i < CT_NSUITES; i++)
			printf("%s\n", ct_suites[i].name);
		return EXIT_SUCCESS;
	}
	/* every name is checked before any suite runs: a typo fails at once */
	for (int a = 1; a < argc; a++)
		if (ct_find(argv[a]) == NULL)
		{
			fprintf(stderr, "%s: no suite named \"%s\" (see --list)\n", argv[0], argv[a]);
			unknown++;
		}
	if (unknown)
		return EXIT_FAILURE;
	if (argc == 1)
		for (int i = 0; i < CT_NSUITES; i++)
			ct_run_suite(&ct_suites[i], &tot);
	else
		for (int a = 1; a < argc; a++)
			ct_run_suite(ct_find(argv[a]), &tot);

	printf("== total: %d suites, %d checks, %d failed\n",
		   tot.suites, tot.ran, tot.failed);
	if (tot.suites == 0)
		fprintf(stderr, "%s: no suite ran\n", argv[0]);
	return (tot.failed == 0 && tot.empty == 0 && tot.suites > 0)
		? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Units of the fault domains' table (server/control/domain.h), no server: which domain
 * a tenant name gets (quarantine or probation, then its rule, then the server's
 * default), how long a quarantine lasts and what lifts it, how suspects of an
 * unattributed fault are found out or cleared, and the table's bound on names; named
 * groups (isolation=group:NAME): their names, where a tenant's comes from, and their
 * bound. */
#include "domain.h"
#include "quota.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define S 1000000000ull

static struct ds_domains table(uint32_t fallback, uint64_t quarantine_ns)
{
    struct ds_domains d;

    memset(&d, 0, sizeof(d));
    d.fallback = fallback;
    d.quarantine_ns = quarantine_ns;
    return d;
}

Test(domain, quarantine_then_the_rule_then_the_default)
{
    static struct ds_domains d;
    struct ds_shm_quota shared = { .isolation = DS_ISO_SHARED }, own = { .isolation = DS_ISO_OWN };
    struct ds_shm_quota unset = { .isolation = DS_ISO_UNSET };

    d = table(DS_ISO_SHARED, 600 * S);
    cr_assert_eq(ds__domain_of(&d, NULL, "a", 10 * S), DS_ISO_SHARED);
    cr_assert_eq(ds__domain_of(&d, &unset, "a", 10 * S), DS_ISO_SHARED);
    cr_assert_eq(ds__domain_of(&d, &own, "a", 10 * S), DS_ISO_OWN);
    d.fallback = DS_ISO_OWN;
    cr_assert_eq(ds__domain_of(&d, NULL, "a", 10 * S), DS_ISO_OWN);
    cr_assert_eq(ds__domain_of(&d, &shared, "a", 10 * S), DS_ISO_SHARED);
    /* A quarantined name is held apart whatever its rule says. */
    cr_assert_eq(ds__domain_fault(&d, "a", 10 * S), 1);
    cr_assert_eq(ds__domain_of(&d, &shared, "a", 11 * S), DS_ISO_OWN);
    cr_assert_eq(ds__domain_of(&d, &shared, "b", 11 * S), DS_ISO_SHARED);
}

Test(domain, a_quarantine_ends_with_its_time_or_when_lifted)
{
    static struct ds_domains d;

    d = table(DS_ISO_SHARED, 60 * S);
    cr_assert_eq(ds__domain_fault(&d, "train-1", 100 * S), 1);
    cr_assert_eq(ds__domain_fault(&d, "train-1", 110 * S), 0, "already quarantined");
    cr_assert_eq(ds__domain_find(&d, "train-1")->own_faults, 2);
    /* The second fault extends it: 110 + 60 s. */
    cr_assert_eq(ds__domain_of(&d, NULL, "train-1", 169 * S), DS_ISO_OWN);
    cr_assert_eq(ds__domain_of(&d, NULL, "train-1", 171 * S), DS_ISO_SHARED);
    cr_assert_eq(ds__domain_fault(&d, "train-2", 200 * S), 1);
    cr_assert_eq(ds__domain_fault(&d, "infer-1", 200 * S), 1);
    /* A pattern lifts the names it matches, and only those. */
    ds__domain_lift(&d, "train-*");
    cr_assert_eq(ds__domain_of(&d, NULL, "train-2", 201 * S), DS_ISO_SHARED);
    cr_assert_eq(ds__domain_of(&d, NULL, "infer-1", 201 * S), DS_ISO_OWN);
    ds__domain_lift(&d, "infer-1");
    cr_assert_eq(ds__domain_of(&d, NULL, "infer-1", 201 * S), DS_ISO_SHARED);
}

Test(domain, no_quarantine_when_it_is_off_but_faults_are_counted)
{
    static struct ds_domains d;

    d = table(DS_ISO_SHARED, 0);
    cr_assert_eq(ds__domain_fault(&d, "a", 5 * S), 0);
    cr_assert_eq(ds__domain_of(&d, NULL, "a", 5 * S), DS_ISO_SHARED);
    ds__domain_lost(&d, "b", 5 * S);
    ds__domain_lost(&d, "b", 6 * S);
    cr_assert_eq(ds__domain_unknown(&d, "c", 6 * S), 0, "no probation when quarantine is off");
    cr_assert_eq(ds__domain_of(&d, NULL, "c", 6 * S), DS_ISO_SHARED);
    cr_assert_eq(ds__domain_own_fault(&d, "a", 7 * S), 0);
    cr_assert_eq(ds__domain_find(&d, "a")->own_faults, 2);
    cr_assert_eq(ds__domain_find(&d, "b")->lost, 2);
    cr_assert_eq(ds__domain_find(&d, "c")->unknown, 1);
    cr_assert_null(ds__domain_find(&d, "d"));
}

/* The table holds DS_DOMAIN_NAMES names; a new one takes the place of the one seen
 * longest ago, whose quarantine goes with it. */
Test(domain, the_name_seen_longest_ago_makes_room)
{
    static struct ds_domains d;
    char name[16];

    d = table(DS_ISO_SHARED, 1000 * S);
    for (int i = 0; i < DS_DOMAIN_NAMES; i++) {
        snprintf(name, sizeof(name), "t%d", i);
        ds__domain_lost(&d, name, (uint64_t)(i + 1) * S);
    }
    ds__domain_lost(&d, "t0", 100 * S);
    cr_assert_eq(ds__domain_fault(&d, "new", 101 * S), 1);
    cr_assert_not_null(ds__domain_find(&d, "t0"), "the name seen last went");
    cr_assert_null(ds__domain_find(&d, "t1"), "the name seen longest ago stayed");
    cr_assert_not_null(ds__domain_find(&d, "new"));
    cr_assert_eq(ds__domain_of(&d, NULL, "new", 102 * S), DS_ISO_OWN);
}

/* An unattributed fault puts every name that lost a context to it on probation; the
 * first suspect to fault alone is its culprit: quarantined, and the others cleared. */
Test(domain, the_suspect_that_faults_alone_is_the_culprit)
{
    static struct ds_domains d;

    d = table(DS_ISO_SHARED, 60 * S);
    /* One fault, three contexts lost within the second. */
    cr_assert_eq(ds__domain_unknown(&d, "bad", 100 * S), 1);
    cr_assert_eq(ds__domain_unknown(&d, "v1", 100 * S + S / 2), 1);
    cr_assert_eq(ds__domain_unknown(&d, "v2", 101 * S), 1);
    /* Another, later: its suspect is not cleared by the first one's culprit. */
    cr_assert_eq(ds__domain_unknown(&d, "other", 130 * S), 1);
    cr_assert_eq(ds__domain_of(&d, NULL, "v1", 102 * S), DS_ISO_OWN);
    cr_assert_eq(ds__domain_of(&d, NULL, "bad", 102 * S), DS_ISO_OWN);
    cr_assert_eq(ds__domain_own_fault(&d, "bad", 140 * S), 1);
    cr_assert(ds__domain_find(&d, "bad")->quarantine_end > 140 * S);
    cr_assert_not(ds__domain_on_probation(ds__domain_find(&d, "bad"), 141 * S));
    cr_assert_eq(ds__domain_of(&d, NULL, "bad", 199 * S), DS_ISO_OWN, "quarantined 60 s");
    cr_assert_eq(ds__domain_of(&d, NULL, "v1", 141 * S), DS_ISO_SHARED, "v1 was cleared");
    cr_assert_eq(ds__domain_of(&d, NULL, "v2", 141 * S), DS_ISO_SHARED, "v2 was cleared");
    cr_assert_eq(ds__domain_of(&d, NULL, "other", 141 * S), DS_ISO_OWN);
    /* A fault of a name on no probation, in its own domain, quarantines nothing. */
    cr_assert_eq(ds__domain_own_fault(&d, "v1", 150 * S), 0);
    cr_assert_eq(ds__domain_of(&d, NULL, "v1", 151 * S), DS_ISO_SHARED);
}

Test(domain, a_probation_ends_with_a_clean_run_its_time_or_when_lifted)
{
    static struct ds_domains d;

    d = table(DS_ISO_SHARED, 60 * S);
    cr_assert_eq(ds__domain_unknown(&d, "a", 10 * S), 1);
    cr_assert_eq(ds__domain_unknown(&d, "a", 10 * S), 0, "already on probation");
    cr_assert_eq(ds__domain_unknown(&d, "b", 10 * S), 1);
    cr_assert_eq(ds__domain_unknown(&d, "c", 10 * S), 1);
    cr_assert_eq(ds__domain_clean(&d, "a", 20 * S), 1);
    cr_assert_eq(ds__domain_clean(&d, "a", 21 * S), 0);
    cr_assert_eq(ds__domain_clean(&d, "nobody", 21 * S), 0);
    cr_assert_eq(ds__domain_of(&d, NULL, "a", 21 * S), DS_ISO_SHARED);
    cr_assert_eq(ds__domain_of(&d, NULL, "b", 69 * S), DS_ISO_OWN);
    cr_assert_eq(ds__domain_of(&d, NULL, "b", 71 * S), DS_ISO_SHARED, "its time passed");
    ds__domain_lift(&d, "c");
    cr_assert_eq(ds__domain_of(&d, NULL, "c", 21 * S), DS_ISO_SHARED);
}

/* isolation=group:NAME names a domain: the rule's group, else the server's default's. */
Test(domain, a_group_comes_from_the_rule_or_the_default)
{
    static struct ds_domains d;
    struct ds_shm_quota g1 = { .isolation = DS_ISO_GROUP, .group = "g1" };
    struct ds_shm_quota shared = { .isolation = DS_ISO_SHARED };

    d = table(DS_ISO_GROUP, 600 * S);
    snprintf(d.fallback_group, sizeof(d.fallback_group), "def");
    cr_assert_eq(ds__domain_of(&d, &g1, "a", 10 * S), DS_ISO_GROUP);
    cr_assert_str_eq(ds__domain_group(&d, &g1), "g1");
    cr_assert_eq(ds__domain_of(&d, NULL, "a", 10 * S), DS_ISO_GROUP);
    cr_assert_str_eq(ds__domain_group(&d, NULL), "def");
    cr_assert_eq(ds__domain_of(&d, &shared, "a", 10 * S), DS_ISO_SHARED);
    /* Quarantine sends a group's culprit to a domain of its own, as any other. */
    cr_assert_eq(ds__domain_fault(&d, "a", 10 * S), 1);
    cr_assert_eq(ds__domain_of(&d, &g1, "a", 11 * S), DS_ISO_OWN);
}

Test(domain, group_names_parse_and_bad_ones_are_refused)
{
    struct ds_shm_quota q = { 0 };
    char buf[64], name[40];
    unsigned which;
    uint32_t iso;

    cr_assert_null(ds_quota_setting("isolation=group:train_A-1", &q, &which));
    cr_assert_eq(q.isolation, DS_ISO_GROUP);
    cr_assert_str_eq(q.group, "train_A-1");
    cr_assert_str_eq(ds_quota_isolation_format(q.isolation, q.group, buf, sizeof(buf)),
                     "group:train_A-1");
    memset(name, 'g', 31);
    name[31] = '\0';
    snprintf(buf, sizeof(buf), "group:%s", name);
    cr_assert_eq(ds_quota_parse_isolation(buf, &iso, q.group), 0, "31 characters are fine");
    const char *bad[] = { "group:", "group:a/b", "group:a b", "group:a.b", "group:*",
                          "group:gggggggggggggggggggggggggggggggg", "group", "groups:a" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(buf, sizeof(buf), "isolation=%s", bad[i]);
        cr_assert_not_null(strstr(ds_quota_setting(buf, &q, &which), "group:NAME"), "%s", bad[i]);
    }
    /* A rule set to shared again forgets its group. */
    cr_assert_null(ds_quota_setting("isolation=shared", &q, &which));
    cr_assert_str_eq(q.group, "");
}

/* At most DS_SHM_GROUPS groups, the rules' and the server's default's together, each
 * counted once. */
Test(domain, the_number_of_groups_is_bounded)
{
    struct ds_shm_quota v[DS_SHM_GROUPS + 2];
    unsigned n = 0;

    memset(v, 0, sizeof(v));
    for (int i = 0; i < DS_SHM_GROUPS; i++) {
        v[n].isolation = DS_ISO_GROUP;
        snprintf(v[n++].group, sizeof(v[0].group), "g%d", i);
    }
    v[n].isolation = DS_ISO_GROUP;
    snprintf(v[n++].group, sizeof(v[0].group), "g0");
    v[n++].isolation = DS_ISO_OWN;
    cr_assert_eq(ds_quota_groups(v, n, NULL), DS_SHM_GROUPS);
    cr_assert_null(ds_quota_groups_check(v, n, NULL));
    cr_assert_null(ds_quota_groups_check(v, n, "g3"), "the default names a group of a rule");
    cr_assert_not_null(strstr(ds_quota_groups_check(v, n, "extra"), "at most 8 groups"));
}

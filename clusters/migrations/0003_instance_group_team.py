"""Instance groups carry their team, like every team-owned row: added nullable, filled from each group's cluster,
then required."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def fill_team_from_cluster(apps, schema_editor):
    InstanceGroup = apps.get_model("clusters", "InstanceGroup")
    Cluster = apps.get_model("clusters", "Cluster")
    InstanceGroup.objects.filter(team__isnull=True).update(
        team=Subquery(Cluster.objects.filter(pk=OuterRef("cluster_id")).values("team_id")[:1]))


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0002_audit_event_keeps_its_team"),
        ("clusters", "0002_instance_groups_features"),
    ]

    operations = [
        migrations.AddField(
            model_name="instancegroup",
            name="team",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                    to="accounts.team"),
        ),
        migrations.RunPython(fill_team_from_cluster, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="instancegroup",
            name="team",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                    to="accounts.team"),
        ),
    ]

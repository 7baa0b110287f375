/**
 * Security › Approvals: Pending (requests and held calls), Granted (active grants), History (ended
 * grants and decided requests) and Rules (exception rules). Developers see their own requests and
 * grants (the server filters) and no Rules tab.
 */
import { useState } from 'react';
import { Tabs } from '../../components/ui';
import { navigate } from '../../router';
import { isReader, useMe } from '../../session';
import { Outcome, type OutcomeReport } from './outcome';
import { Pending } from './pending';
import { Granted } from './granted';
import { History } from './history';
import { Rules } from './rules';

export const APPROVAL_TABS = [
  { key: 'pending', label: 'Pending' },
  { key: 'granted', label: 'Granted' },
  { key: 'history', label: 'History' },
  { key: 'rules', label: 'Rules' },
] as const;

export type ApprovalTab = (typeof APPROVAL_TABS)[number]['key'];

export function Approvals({ tab }: { tab: ApprovalTab }) {
  const me = useMe();
  const [outcome, setOutcome] = useState<OutcomeReport | null>(null);
  const tabs = APPROVAL_TABS.filter((t) => t.key !== 'rules' || isReader(me.role)).map((t) => ({ key: t.key, label: t.label }));
  return (
    <section>
      <h1>Approvals</h1>
      <Tabs
        tabs={tabs}
        current={tab}
        onSelect={(k) => {
          setOutcome(null);
          navigate(`/approvals/${k}`);
        }}
      />
      <Outcome report={outcome} onDismiss={() => setOutcome(null)} />
      {tab === 'pending' ? <Pending onOutcome={setOutcome} /> : null}
      {tab === 'granted' ? <Granted onOutcome={setOutcome} /> : null}
      {tab === 'history' ? <History /> : null}
      {tab === 'rules' ? <Rules /> : null}
    </section>
  );
}

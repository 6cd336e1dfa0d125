// The Try page answers a server's question (elicitation) during the call. The Run button's POST
// is sent from here, so this page stays alive while the call runs: meanwhile it asks the site
// for the server's question and shows it as a form; the operator's answer is posted to the
// waiting call. When the call ends, its result replaces the page's content. Without JavaScript
// the form posts as usual and a question goes unanswered (the result then says so).
'use strict';
{
    const POLL_MS = 300;

    const replaceContent = (html) => {
        const next = new DOMParser().parseFromString(html, 'text/html').getElementById('content-main');
        const here = document.getElementById('content-main');
        if (next && here) {
            here.replaceWith(next);
        } else {
            document.documentElement.innerHTML = html;
        }
    };

    const ask = async (form, trial, box, running) => {
        const url = `${form.dataset.questionUrl}?trial=${encodeURIComponent(trial)}`;
        while (running()) {
            let response = null;
            try {
                response = await fetch(url, {credentials: 'same-origin'});
            } catch {
                // A lost poll is asked again; the call itself is the Run request's.
            }
            if (!running()) {
                return;
            }
            if (response && response.status === 200) {
                const html = await response.text();
                const shown = box.querySelector('form.nr-llm-answer');
                const fresh = new DOMParser().parseFromString(html, 'text/html').querySelector('form');
                // The same question stays as it is (the operator may be typing in it), and one
                // answered is not shown again while the call picks the answer up.
                const number = fresh ? fresh.dataset.number : '';
                const answered = number === box.dataset.answered;
                if (!answered && (!shown || shown.dataset.number !== number)) {
                    box.innerHTML = html;
                    box.hidden = false;
                }
            }
            await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        }
    };

    const run = async (form, submitter) => {
        const data = new FormData(form, submitter);
        const box = document.getElementById('try-tool-question');
        let done = false;
        if (submitter) {
            submitter.disabled = true;
        }
        data.set('answering', '1');
        ask(form, String(data.get('trial') || ''), box, () => !done).catch(() => {});
        try {
            const response = await fetch(form.getAttribute('action') || window.location.href, {
                method: 'POST', body: data, credentials: 'same-origin',
            });
            done = true;
            replaceContent(await response.text());
        } finally {
            done = true;
        }
    };

    const answer = async (form, submitter) => {
        const data = new FormData(form, submitter);
        // getAttribute: the buttons are named "action", which shadows form.action.
        const response = await fetch(form.getAttribute('action'), {
            method: 'POST', body: data, credentials: 'same-origin',
        });
        const box = document.getElementById('try-tool-question');
        if (response.ok) {
            box.dataset.answered = String(data.get('number'));
        }
        box.innerHTML = await response.text();
    };

    document.addEventListener('submit', (event) => {
        const form = event.target;
        if (!(form instanceof HTMLFormElement)) {
            return;
        }
        if (form.getAttribute('id') === 'try-tool-form') {
            event.preventDefault();
            run(form, event.submitter);
        } else if (form.classList.contains('nr-llm-answer')) {
            event.preventDefault();
            answer(form, event.submitter);
        }
    });
}
